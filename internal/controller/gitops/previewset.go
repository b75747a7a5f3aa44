package gitops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/spec"
)

// A branch that edits an environment set's file changes the want of
// every element (their sums include the whole file), yet most elements
// are as the watched branch has them: a preview leaves out an element
// whose own sum (contentSums.element: the set file without its
// generators, the element, what it reads) is the watched branch's, so
// a set of 1,000 elements of which one changed previews that one.

// unchangedElements names the elements of set file p at the branch's
// commit whose element sums equal those of the same elements in the
// watched tree (none when the watched tree has no valid set there).
func unchangedElements(g *Reconciler, watched, p string, content []byte, in setInputs, els []spec.SetElement, envs []*spec.Environment) (map[string]bool, error) {
	out := map[string]bool{}
	if watched == "" {
		return out, nil
	}
	before, err := os.ReadFile(filepath.Join(watched, filepath.FromSlash(p)))
	if errors.Is(err, os.ErrNotExist) || (err == nil && spec.KindOf(before) != spec.KindSet) {
		return out, nil
	} else if err != nil {
		return nil, fmt.Errorf("the watched branch's %s: %w", p, err)
	}
	_, wEls, wEnvs, _, diags, err := g.setEnvs(gitwatch.Commit{Hash: "watched", Dir: watched}, p, before, in, newContentSums())
	if err != nil || diags.HasErrors() {
		return out, err // an invalid watched set: every element previews
	}
	was, err := elementSums(before, wEls, wEnvs)
	if err != nil {
		return nil, err
	}
	now, err := elementSums(content, els, envs)
	if err != nil {
		return nil, err
	}
	for name, sum := range now {
		if was[name] == sum {
			out[name] = true
		}
	}
	return out, nil
}

// elementSums are the element sums of a set file's elements, by name.
func elementSums(content []byte, els []spec.SetElement, envs []*spec.Environment) (map[string]string, error) {
	set, err := withoutGenerators(content)
	if err != nil {
		return nil, err
	}
	cs := newContentSums()
	out := make(map[string]string, len(els))
	for i, el := range els {
		sum, err := cs.element(envs[i], set, el)
		if err != nil {
			return nil, err
		}
		out[el.Name] = sum
	}
	return out, nil
}

// withoutGenerators is a set file's YAML without spec.generators, in
// one encoding whatever the file's layout.
func withoutGenerators(content []byte) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(content, &doc); err != nil {
		return nil, err
	}
	if s, ok := doc["spec"].(map[string]any); ok {
		delete(s, "generators")
	}
	return yaml.Marshal(doc)
}
