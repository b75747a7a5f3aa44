package words

// Role is an API token's role. Roles are ordered: a token may do what its
// role and every weaker role may (AtLeast), the one place knit compares
// them.
type Role string

// Token roles, weakest first.
const (
	RoleViewer   Role = "viewer"   // reads
	RoleOperator Role = "operator" // plans, applies, approves, rolls back, tears down
	RoleAdmin    Role = "admin"    // also manages tokens and may override a policy
)

// Roles is the closed set, weakest first.
func Roles() []Role { return []Role{RoleViewer, RoleOperator, RoleAdmin} }

// rank is r's place in Roles from 1; 0 for a word that is no role.
func (r Role) rank() int {
	for i, known := range Roles() {
		if r == known {
			return i + 1
		}
	}
	return 0
}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// AtLeast reports whether a token of role r may do what one of role min
// may: r is min or stronger. A word that is no role is weaker than every
// role, so it is never at least anything.
func (r Role) AtLeast(min Role) bool { return r.Valid() && r.rank() >= min.rank() }
