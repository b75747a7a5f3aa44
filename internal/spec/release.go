package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
)

// ReleaseContent is what a pipeline promotes: the identity of the
// template an environment was built from (path and content hash, or git
// URL and commit) and the values of its promote: true parameters. The
// stage environments' other parameters stay their own.
type ReleaseContent struct {
	Template string         `json:"template"`
	Params   map[string]any `json:"params"`
}

// ReleaseOf is the release an environment, as resolved, carries.
func ReleaseOf(env *Environment) (ReleaseContent, error) {
	t := env.Metadata.Annotations[AnnotationTemplate]
	if t == "" {
		return ReleaseContent{}, errors.New("the environment is not built from a template (spec.template): a pipeline promotes a template's version and its promote: true parameters")
	}
	params := map[string]any{}
	for k, v := range env.Promoted {
		params[k] = v
	}
	return ReleaseContent{Template: t, Params: params}, nil
}

// ID names the release by its content: the same template and values are
// the same release, whatever commit brought them.
func (r ReleaseContent) ID() string {
	b, err := json.Marshal(r) // map keys sorted: one encoding per content
	if err != nil {
		b = []byte(r.Template)
	}
	sum := sha256.Sum256(b)
	return "r-" + hex.EncodeToString(sum[:])[:12]
}
