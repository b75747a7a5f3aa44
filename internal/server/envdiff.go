package server

import (
	"net/http"
	"strings"

	"knit.dev/knit/internal/knit"
)

// diffEnvironments answers what making environment a look like b would
// change: GET /api/v1/diff?a=TEAM/ENV[@REV]&b=TEAM/ENV[@REV]. The library
// refuses an environment of a team the token is not limited to, whether it
// exists or not.
func (s *Server) diffEnvironments(w http.ResponseWriter, r *http.Request) {
	req, err := diffQuery(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.k.DiffEnvironments(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// diffQuery reads ?a= and ?b=, each team/env with an optional @REV.
func diffQuery(r *http.Request) (knit.EnvDiffRequest, error) {
	q := r.URL.Query()
	var req knit.EnvDiffRequest
	for _, p := range []struct {
		name string
		ref  *string
		rev  *int
	}{{"a", &req.A, &req.ARev}, {"b", &req.B, &req.BRev}} {
		v := q.Get(p.name)
		ref, rev, err := knit.ParseDiffSide(v)
		if err != nil {
			return req, badReq(p.name + ": " + err.Error())
		}
		team, env, ok := strings.Cut(ref, "/")
		if !ok || team == "" || env == "" || strings.Contains(env, "/") {
			return req, badReq(p.name + " must name an environment as team/env, with @REV for one revision: ?a=shop/prod&b=shop/staging or ?a=shop/dev@3&b=shop/dev@5")
		}
		*p.ref, *p.rev = ref, rev
	}
	return req, nil
}
