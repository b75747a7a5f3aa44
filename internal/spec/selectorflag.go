package spec

import (
	"fmt"
	"strings"
)

// ParseSelector reads a selector as the command line writes one:
// "k=v,k2=v2" (each pair must match); "" is no selector (nil).
func ParseSelector(s string) (*Selector, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	sel := &Selector{MatchLabels: map[string]string{}}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("selector %q: write KEY=VALUE pairs separated by commas, e.g. ring=main,upgrade_testing=true", s)
		}
		if why := labelKeyProblem(k); why != "" {
			return nil, fmt.Errorf("selector %q: %s", s, why)
		}
		sel.MatchLabels[k] = v
	}
	return sel, nil
}
