package gitops

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"knit.dev/knit/internal/spec"
)

// contentSums hashes what environments read, each file or folder once per
// commit.
type contentSums map[string]pathSum

// pathSum is a path's hash, and whether it is or holds a symlink.
type pathSum struct {
	sum    string
	linked bool
}

func newContentSums() contentSums { return contentSums{} }

// linked reports whether path p, hashed already, is or holds a symlink.
func (cs contentSums) linked(p string) bool { return cs[p].linked }

// env hashes an environment file's content, the files it was built from
// (its template, the files it extends) and every local input of its
// components, named relative to the file's folder.
func (cs contentSums) env(env *spec.Environment, content []byte) (string, error) {
	return cs.hash(env, content, false)
}

// element hashes what an environment set's element env reads but the
// other elements: the set file without its generators (set), the
// element itself, the files it was built from but the set file, and the
// local inputs. Two commits whose set files differ in other elements
// only give an element the same sum.
func (cs contentSums) element(env *spec.Environment, set []byte, el spec.SetElement) (string, error) {
	elJSON, _ := json.Marshal(el) // plain values decoded from YAML: cannot fail
	return cs.hash(env, append(append(append([]byte(nil), set...), 0), elJSON...), true)
}

// hash hashes content, the files env was built from (but the set file,
// when notSet) and its local inputs.
func (cs contentSums) hash(env *spec.Environment, content []byte, notSet bool) (string, error) {
	h := sha256.New()
	h.Write(content)
	for _, f := range env.Sources {
		if notSet && f.Kind == spec.SourceSet {
			continue
		}
		fmt.Fprintf(h, "\x00from\x00%s", f.ID())
	}
	for _, c := range env.Spec.Components {
		for _, p := range env.LocalInputs(c) {
			sum, err := cs.path(p)
			if err != nil {
				return "", err
			}
			rel, _ := filepath.Rel(env.Dir, p)
			fmt.Fprintf(h, "\x00%s\x00%s", filepath.ToSlash(rel), sum)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// path hashes a file, a symlink (its target) or a folder (every entry, by
// relative name, in order). A path that does not exist hashes as missing:
// validation reports it.
func (cs contentSums) path(p string) (string, error) {
	if ps, ok := cs[p]; ok {
		return ps.sum, nil
	}
	h := sha256.New()
	var entries []string
	linked := false
	err := filepath.WalkDir(p, func(q string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(p, q)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(q)
			if err != nil {
				return err
			}
			entries = append(entries, rel+"\x00link\x00"+target)
			linked = true
		case d.Type().IsRegular():
			b, err := os.ReadFile(q)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			entries = append(entries, rel+"\x00file\x00"+hex.EncodeToString(sum[:]))
		}
		return nil
	})
	if os.IsNotExist(err) {
		entries, err = []string{"missing"}, nil
	}
	if err != nil {
		return "", err
	}
	sort.Strings(entries)
	for _, e := range entries {
		h.Write([]byte(e + "\n"))
	}
	cs[p] = pathSum{sum: hex.EncodeToString(h.Sum(nil)), linked: linked}
	return cs[p].sum, nil
}

// setState is what recordCommit has gathered so far, that a set file adds to.
