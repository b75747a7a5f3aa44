package spec

import (
	"fmt"
	"sort"
)

// WaveMember is one environment a rollout in waves reaches: its ID and
// its metadata.labels.
type WaveMember struct {
	ID     string            `json:"id"`
	Labels map[string]string `json:"labels,omitempty"`
}

// PlannedWave is what one step of a rollout adds: the IDs of its
// environments, by ID, and a Note when it adds none (why).
type PlannedWave struct {
	Step string   `json:"step"`
	IDs  []string `json:"ids"`
	Note string   `json:"note,omitempty"`
}

// Plan splits members into the waves of w's steps, in order. A selector
// step takes the members it matches that no earlier wave took; a percent
// step takes, by ID, as many more as make ceil(percent × members / 100)
// reached in all (so 25% of 12 reaches 3, 25% of 3 reaches 1: a step
// with a percent above zero always reaches at least one). A step that
// adds nobody is an empty wave, passed over, with a note saying why.
func (w *SetWaves) Plan(members []WaveMember) []PlannedWave {
	ms := append([]WaveMember(nil), members...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	if len(w.Steps) == 0 {
		return w.chunks(ms)
	}
	reached := map[string]bool{}
	out := make([]PlannedWave, 0, len(w.Steps))
	for _, st := range w.Steps {
		pw := PlannedWave{Step: st.String(), IDs: []string{}}
		if st.Selector != nil {
			matched := 0
			for _, m := range ms {
				if st.Selector.Matches(m.Labels) {
					matched++
					if !reached[m.ID] {
						pw.IDs = append(pw.IDs, m.ID)
					}
				}
			}
			if matched == 0 {
				pw.Note = fmt.Sprintf("the selector %s matches none of the %d environments", st.Selector, len(ms))
			} else if len(pw.IDs) == 0 {
				pw.Note = fmt.Sprintf("the %d environments the selector %s matches are in earlier waves", matched, st.Selector)
			}
		} else {
			target := (len(ms)*st.Percent + 99) / 100
			for _, m := range ms {
				if len(reached)+len(pw.IDs) >= target {
					break
				}
				if !reached[m.ID] {
					pw.IDs = append(pw.IDs, m.ID)
				}
			}
			if len(pw.IDs) == 0 {
				pw.Note = fmt.Sprintf("earlier waves already reach %d of %d environments (%d%% is %d)", len(reached), len(ms), st.Percent, target)
			}
		}
		for _, id := range pw.IDs {
			reached[id] = true
		}
		out = append(out, pw)
	}
	return out
}

// chunks are the waves of a fleet stage without steps: the members, by
// ID, maxParallel at a time (one empty wave, with a note, when there are
// none).
func (w *SetWaves) chunks(ms []WaveMember) []PlannedWave {
	if len(ms) == 0 {
		return []PlannedWave{{Step: "all", IDs: []string{}, Note: "the selector matches no live environment"}}
	}
	n := w.Parallel(len(ms))
	var out []PlannedWave
	for i := 0; i < len(ms); i += n {
		pw := PlannedWave{Step: fmt.Sprintf("%d-%d of %d", i+1, min(i+n, len(ms)), len(ms))}
		for _, m := range ms[i:min(i+n, len(ms))] {
			pw.IDs = append(pw.IDs, m.ID)
		}
		out = append(out, pw)
	}
	return out
}
