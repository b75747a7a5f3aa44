package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"sync"
)

// parseAll evaluates every unit, workers at a time, in files' order.
func parseAll(p *parser, files []string, workers int) []Unit {
	if workers < 1 {
		workers = 1
	}
	units := make([]Unit, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				units[i] = p.unitSafe(files[i])
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return units
}

// unitSafe is unit, with a panic in Terragrunt's parser turned into the
// unit's error rather than the end of the whole import.
func (p *parser) unitSafe(file string) (u Unit) {
	defer func() {
		if r := recover(); r != nil {
			u = Unit{Path: p.rel(filepath.Dir(file)), File: p.rel(file), Error: fmt.Sprintf("Terragrunt's parser failed on it: %v", r)}
			if os.Getenv("KNIT_TERRAGRUNT_DEBUG") != "" {
				debug.PrintStack()
			}
		}
	}()
	return p.unit(file)
}

// sharedConfigs takes out the terragrunt.hcl files other units include (a
// root configuration in the older layout): they are shared configuration,
// not units, and say so in a finding.
func sharedConfigs(units []Unit) ([]Unit, []Finding) {
	included := map[string]int{}
	for _, u := range units {
		for _, f := range u.Includes {
			included[f]++
		}
	}
	var out []Unit
	var findings []Finding
	for _, u := range units {
		if n := included[u.File]; n > 0 {
			findings = append(findings, Finding{Pos: u.File, What: "included configuration", Why: "other units include it, so it is shared configuration rather than a unit"})
			continue
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, findings
}
