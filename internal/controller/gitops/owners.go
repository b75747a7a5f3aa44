package gitops

import (
	"fmt"
	"path"
	"strings"
)

// Owner says which team owns the files under a repository path
// (CODEOWNERS-style): Path is a path.Match pattern of the file's path in
// the repository, or a folder followed by /** for everything below it.
type Owner struct {
	Path string `yaml:"path"`
	Team string `yaml:"team"`
}

// CheckOwners refuses a rule without a path or a team, or with a pattern
// path.Match cannot read, naming the rule.
func CheckOwners(owners []Owner) error {
	for i, o := range owners {
		switch {
		case o.Path == "" || o.Team == "":
			return fmt.Errorf("owners[%d]: want {path: PATTERN, team: TEAM}, got path %q team %q", i, o.Path, o.Team)
		case strings.Contains(o.Team, "/"):
			return fmt.Errorf("owners[%d]: team %q: a team name has no /", i, o.Team)
		}
		if _, err := path.Match(strings.TrimSuffix(o.Path, "/**"), ""); err != nil {
			return fmt.Errorf("owners[%d]: path %q: %v", i, o.Path, err)
		}
	}
	return nil
}

// ownerOf is the team owning file p ("" for none): the last rule that
// matches, as in CODEOWNERS.
func ownerOf(owners []Owner, p string) string {
	team := ""
	for _, o := range owners {
		if owns(o.Path, p) {
			team = o.Team
		}
	}
	return team
}

func owns(pattern, p string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/**"); ok {
		return strings.HasPrefix(p, dir+"/")
	}
	ok, err := path.Match(pattern, p)
	return err == nil && ok
}
