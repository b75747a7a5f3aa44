package regsource

import (
	"fmt"
	"sort"
	"strings"

	version "github.com/hashicorp/go-version"
)

// CheckConstraint reports whether c is a version constraint the registry
// protocol accepts ("", "1.2.3", "~> 1.1", ">= 1.0, < 2.0").
func CheckConstraint(c string) error {
	if strings.TrimSpace(c) == "" {
		return nil
	}
	if _, err := version.NewConstraint(c); err != nil {
		return fmt.Errorf("version %q is not a version constraint such as \"~> 1.1\" or \">= 1.0, < 2.0\"", c)
	}
	return nil
}

// choose returns the highest of versions that constraint allows; an
// empty constraint allows every release (no pre-release), as OpenTofu.
func choose(versions []string, constraint string) (string, error) {
	var cs version.Constraints
	if strings.TrimSpace(constraint) != "" {
		var err error
		if cs, err = version.NewConstraint(constraint); err != nil {
			return "", CheckConstraint(constraint)
		}
	}
	var parsed []*version.Version
	for _, s := range versions {
		if v, err := version.NewVersion(s); err == nil {
			parsed = append(parsed, v)
		}
	}
	sort.Sort(version.Collection(parsed))
	for i := len(parsed) - 1; i >= 0; i-- {
		v := parsed[i]
		if (cs == nil && v.Prerelease() == "") || (cs != nil && cs.Check(v)) {
			return v.Original(), nil
		}
	}
	shown := make([]string, len(parsed))
	for i, v := range parsed {
		shown[i] = v.Original()
	}
	if len(shown) == 0 {
		return "", fmt.Errorf("%w: the registry lists no versions", ErrNoVersion)
	}
	return "", fmt.Errorf("%w %q; available: %s", ErrNoVersion, constraint, strings.Join(shown, ", "))
}

// exactVersion reports whether c allows one version only ("1.2.3", "= 1.2.3").
func exactVersion(c string) bool {
	s := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(c), "="))
	if s == "" || strings.ContainsAny(s, "<>~!,") {
		return false
	}
	_, err := version.NewVersion(s)
	return err == nil
}
