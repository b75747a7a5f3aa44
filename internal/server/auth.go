package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

type tokenKey struct{}

// principal is the token a request was authenticated with.
func principal(ctx context.Context) view.Token {
	t, _ := ctx.Value(tokenKey{}).(view.Token)
	return t
}

// authed wraps h: the request needs a live token (401 otherwise) of at
// least role (403 otherwise).
func (s *Server) authed(role store.Role, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="knit"`)
			s.fail(w, r, fmt.Errorf("%w: send Authorization: Bearer <token> (knit token create)", knit.ErrUnauthenticated))
			return
		}
		t, err := s.k.Authenticate(r.Context(), strings.TrimSpace(secret))
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="knit"`)
			s.fail(w, r, err)
			return
		}
		if !t.Role.AtLeast(role) {
			s.fail(w, r, fmt.Errorf("%w: token %s is a %s; this needs %s", errForbidden, t.Name, t.Role, role))
			return
		}
		// The library resolves environments as this token sees them.
		ctx := knit.WithCaller(context.WithValue(r.Context(), tokenKey{}, t), t)
		h(w, r.WithContext(ctx))
	}
}

// team checks that the request's token may act on team's environments.
func team(r *http.Request, teamName string) error {
	t := principal(r.Context())
	if !knit.CanSee(t, teamName) {
		return fmt.Errorf("%w: token %s is limited to teams %s", errForbidden, t.Name, strings.Join(t.Teams, ", "))
	}
	return nil
}
