package knit

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// tokenPrefix marks knit tokens, so a leaked one is recognisable (and
// secret scanners can find it).
const tokenPrefix = "knit_"

// tokenName is a token name's characters; its length (at most 63) is
// checked apart: a bounded repeat such as {0,62} compiles into 62 copies,
// which cost every knit command a fifth of a millisecond at start-up.
var tokenName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// ErrUnauthenticated means a token is missing, unknown or revoked.
var ErrUnauthenticated = errors.New("no valid token")

// CreateToken is the action that makes a token with a role, limited to
// Teams (none: every team), audited as Actor, and returns its secret.
// Only the secret's hash is stored: the secret cannot be shown again. Who
// may create one is the adapter's to check (the server: an admin token;
// the local CLI: whoever holds the data dir).
type CreateToken struct {
	k     *Knit
	Name  string
	Role  string
	Teams []string
	Actor string
}

// NewCreateToken is the CreateToken action on k.
func NewCreateToken(k *Knit, name string, role string, teams []string, actor string) *CreateToken {
	return &CreateToken{k: k, Name: name, Role: role, Teams: teams, Actor: actor}
}

// Run carries the action out.
func (op *CreateToken) Run(ctx context.Context) (string, view.Token, error) {
	k := op.k
	name, role, teams, actor := op.Name, op.Role, op.Teams, op.Actor
	if len(name) > 63 || !tokenName.MatchString(name) {
		return "", view.Token{}, fmt.Errorf("token name %q: use lower-case letters, digits, '.', '_' or '-' (at most 63)", name)
	}
	if !store.Role(role).Valid() {
		return "", view.Token{}, fmt.Errorf("role %q: use viewer, operator or admin", role)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", view.Token{}, err
	}
	secret := tokenPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
	t := store.Token{Name: name, Hash: HashToken(secret), Role: store.Role(role), Teams: teams, CreatedBy: actor}
	if err := k.store.CreateToken(ctx, t); err != nil {
		return "", tokenRecord(t), err
	}
	detail := fmt.Sprintf("token %s (%s", name, role)
	if len(teams) > 0 {
		detail += ", teams " + strings.Join(teams, ",")
	}
	if err := k.store.AppendAudit(ctx, store.AuditEvent{Actor: actor, Action: "token-create", Detail: detail + ")"}); err != nil {
		return "", tokenRecord(t), fmt.Errorf("record the token in the audit trail: %w", err)
	}
	return secret, tokenRecord(t), nil
}

// HashToken is how a token is stored and looked up.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Authenticate returns the live token whose secret this is. A token
// revoked through this Knit is refused at once; one revoked by another
// process sharing the data directory within tokenTTL.
func (k *Knit) Authenticate(ctx context.Context, secret string) (view.Token, error) {
	if !strings.HasPrefix(secret, tokenPrefix) {
		return view.Token{}, ErrUnauthenticated
	}
	hash, now := HashToken(secret), k.now()
	t, ok, gen := k.tokens.get(hash, now)
	if ok {
		return tokenRecord(t), nil
	}
	t, err := k.store.TokenByHash(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return view.Token{}, ErrUnauthenticated
	}
	if err == nil {
		k.tokens.put(hash, t, now, gen)
	}
	return tokenRecord(t), err
}

// Tokens lists every token (never their secrets).
func (rs *Records) Tokens(ctx context.Context) ([]view.Token, error) {
	k := rs.k
	ts, err := k.store.ListTokens(ctx)
	if ts == nil {
		return []view.Token{}, err
	}
	return mapAll(ts, tokenRecord), err
}

// RevokeToken is the action that revokes a token at once, and audits it:
// a run it asked for that still waits in a queue is refused when it
// leaves it (the door looks the token up again). Who may revoke is the
// adapter's to check, as for CreateToken.
type RevokeToken struct {
	k     *Knit
	Name  string
	Actor string
}

// NewRevokeToken is the RevokeToken action on k.
func NewRevokeToken(k *Knit, name string, actor string) *RevokeToken {
	return &RevokeToken{k: k, Name: name, Actor: actor}
}

// Run carries the action out.
func (op *RevokeToken) Run(ctx context.Context) error {
	k := op.k
	name, actor := op.Name, op.Actor
	err := k.store.RevokeToken(ctx, name, k.now())
	k.tokens.invalidate() // after the store: a lookup racing it cannot cache the token again
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: no live token %q (knit token list)", ErrNotFound, name)
		}
		return err
	}
	if err := k.store.AppendAudit(ctx, store.AuditEvent{Actor: actor, Action: "token-revoke", Detail: "token " + name}); err != nil {
		return fmt.Errorf("record the revocation in the audit trail: %w", err)
	}
	return nil
}

// CanSee reports whether a token may read or act on an environment of team.
func CanSee(t view.Token, team string) bool {
	if len(t.Teams) == 0 {
		return true
	}
	for _, x := range t.Teams {
		if x == team {
			return true
		}
	}
	return false
}
