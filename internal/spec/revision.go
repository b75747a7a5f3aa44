package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
)

// FromJSON rebuilds an environment stored as JSON (a revision), read from
// source; relative paths resolve against root when set (a git checkout),
// else against source's folder, again.
func FromJSON(body []byte, source, root string) (*Environment, error) {
	env := &Environment{}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // integers beyond float64's precision stay exact, as Parse keeps them
	if err := dec.Decode(env); err != nil {
		return nil, fmt.Errorf("stored environment is unreadable: %w", err)
	}
	env.File = source
	if root != "" {
		env.Dir = root
	} else if source != "" {
		if abs, err := filepath.Abs(source); err == nil {
			env.Dir = filepath.Dir(abs)
		}
	}
	if env.Up != "" && env.Dir != "" {
		env.Root = filepath.Join(env.Dir, filepath.FromSlash(env.Up))
	}
	return env, nil
}
