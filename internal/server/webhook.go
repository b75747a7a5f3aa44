package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// gitWebhook is POST /api/v1/webhooks/git: a push notification, signed
// GitHub-style (X-Hub-Signature-256: sha256=HMAC(secret, body)). A good
// signature makes the git watcher fetch at once; a bad or missing one gets
// 401 and changes nothing. A push of a branch that knit serve previews
// (--preview-branches) has it previewed first.
func (s *Server) gitWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 5<<20))
	if err != nil {
		s.fail(w, r, badReq("request body: "+err.Error()))
		return
	}
	if s.cfg.WebhookSecret == "" || !validSignature(s.cfg.WebhookSecret, body, r.Header.Get("X-Hub-Signature-256")) {
		s.fail(w, r, &unauthenticated{"bad or missing X-Hub-Signature-256: sign the body with the webhook secret (sha256=HMAC-SHA256 in hex)"})
		return
	}
	if s.cfg.Git == nil {
		s.fail(w, r, fmt.Errorf("%w: GitOps is not configured (--git-url)", errNotConfigured))
		return
	}
	// A push of a branch knit previews asks for its preview first; any
	// other push fetches the watched branch.
	if p, ok := s.cfg.Git.(Previewer); ok {
		if b := pushedBranch(body); b != "" && p.PreviewMatches(b) {
			p.PreviewSoon(b)
			writeJSON(w, http.StatusAccepted, map[string]string{"status": "previewing", "branch": b})
			return
		}
	}
	s.cfg.Git.Wake()
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "fetching"})
}

// validSignature checks a GitHub-style sha256=<hex> HMAC of body in constant time.
func validSignature(secret string, body []byte, header string) bool {
	sig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}
