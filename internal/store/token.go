package store

import (
	"context"
	"time"
	"unicode/utf8"

	"knit.dev/knit/internal/words"
)

// Role is a token's role (words.Role); Role.AtLeast orders them.
type Role = words.Role

// Token roles, weakest first: words.Roles' words, untyped so that they
// name a role wherever a string does too (a flag, a test's table);
// TestRolesAreTheWords keeps them the same.
const (
	RoleViewer   = "viewer"
	RoleOperator = "operator"
	RoleAdmin    = "admin"
)

// Token is an API token of knit serve. Only its SHA-256 Hash is stored.
type Token struct {
	Name string `json:"name"`
	Hash string `json:"-"`
	Role Role   `json:"role"`
	// Teams limits the token to these teams' environments; empty: every team.
	Teams     []string  `json:"teams,omitempty"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	RevokedAt time.Time `json:"revokedAt,omitzero"`
}

// Tokens is the part of the Store that keeps API tokens and server settings.
type Tokens interface {
	// CreateToken records a new token; a live token of the same name is ErrConflict.
	CreateToken(ctx context.Context, t Token) error
	// TokenByHash finds the live token with that hash; a revoked or unknown one is ErrNotFound.
	TokenByHash(ctx context.Context, hash string) (Token, error)
	// ListTokens lists every token, revoked ones included, by name.
	ListTokens(ctx context.Context) ([]Token, error)
	// RevokeToken revokes the live token of that name; none is ErrNotFound.
	RevokeToken(ctx context.Context, name string, at time.Time) error

	// Setting reads a server setting (ErrNotFound if unset); SetSetting writes one.
	Setting(ctx context.Context, key string) (string, error)
	SetSetting(ctx context.Context, key, value string) error
	// Settings returns every setting whose key starts with prefix, by key.
	Settings(ctx context.Context, prefix string) (map[string]string, error)
	// SetSettings writes every key of kv in one transaction (all or
	// none); an empty value deletes the key.
	SetSettings(ctx context.Context, kv map[string]string) error
}

// PrefixEnd is the least string greater than every string that starts
// with prefix, byte by byte: the exclusive end of the key range a prefix
// covers (keys >= prefix AND keys < end), which an index on the keys can
// answer. ok is false when there is none (prefix is empty or all 0xff
// bytes: every key from prefix on matches), or when the end would not be
// valid UTF-8 (a database may refuse it): the caller then scans.
func PrefixEnd(prefix string) (end string, ok bool) {
	b := []byte(prefix)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "", false
	}
	b[len(b)-1]++
	if !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}
