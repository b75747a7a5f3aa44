package server

import (
	"net/http"

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
	d, err := knit.NewRecords(s.k).DiffEnvironments(r.Context(), req)
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
		ref, rev, err := knit.ParseDiffID(q.Get(p.name))
		if err != nil {
			return req, badReq(p.name + ": " + err.Error() + ": ?a=shop/prod&b=shop/staging")
		}
		*p.ref, *p.rev = ref, rev
	}
	return req, nil
}
