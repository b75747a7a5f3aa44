package server

import (
	"net/http"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/view"
)

// extendTTL moves an ephemeral environment's expiry (operator; audited).
func (s *Server) extendTTL(w http.ResponseWriter, r *http.Request) {
	id, err := envID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var body struct {
		Extend string `json:"extend"`
	}
	if err := decode(r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	by, err := spec.ParseTTL(body.Extend)
	if err != nil {
		s.fail(w, r, badReq("extend: "+err.Error()+`; write a duration such as "24h"`))
		return
	}
	x, err := knit.NewExtendTTL(s.k, id, by, principal(r.Context()).Name).Run(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, view.Expiry{Env: x.Env, ExpiresAt: x.At})
}
