package terraform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"

	"knit.dev/knit/internal/runner"
)

// stream reads the tool's machine-readable UI (plan -json, apply -json: one
// JSON message a line) as it arrives. Each message's human text (@message,
// and a diagnostic's detail) goes to the component's log; the raw JSON never
// does, so output values, which the apply stream carries, never reach it.
// What knit needs is kept: resource changes and drift, output changes or
// values, and error diagnostics for the error the operation returns.
//
// A stream is an io.Writer for the command's stdout; call flush after the
// command returns. It is safe for the one goroutine exec copies stdout with.
type stream struct {
	log io.Writer

	mu      sync.Mutex
	partial []byte
	changes []streamChange
	drift   []streamChange
	// planOutputs is a plan's outputs message (each output's action);
	// outputs an apply's (values): nil if the tool sent none. apply without
	// a saved plan sends both, the plan's first.
	planOutputs, outputs map[string]streamOutput
	errors               []string // at most maxErrors
	// cause is the first error diagnostic, for the error's first line.
	cause string
	// checks are the check blocks whose assertions failed, in order, once each.
	checks []runner.CheckFailure
}

// maxErrors bounds the error diagnostics an error carries: the log has
// them all.
const maxErrors = 20

// streamChange is a planned_change or resource_drift message's change.
type streamChange struct {
	Resource struct {
		Addr string `json:"addr"`
	} `json:"resource"`
	Action string `json:"action"`
}

// streamOutput is one entry of an outputs message: a planned change
// (Action) in a plan, the value in an apply (absent when sensitive).
type streamOutput struct {
	Sensitive bool            `json:"sensitive"`
	Action    string          `json:"action"`
	Value     json.RawMessage `json:"value"`
}

type streamMessage struct {
	Type       string                  `json:"type"`
	Message    string                  `json:"@message"`
	Change     *streamChange           `json:"change"`
	Outputs    map[string]streamOutput `json:"outputs"`
	Diagnostic *struct {
		Severity string         `json:"severity"`
		Summary  string         `json:"summary"`
		Detail   string         `json:"detail"`
		Snippet  *streamSnippet `json:"snippet"`
		Range    *struct {
			Filename string `json:"filename"`
			Start    struct {
				Line int `json:"line"`
			} `json:"start"`
		} `json:"range"`
	} `json:"diagnostic"`
}

func newStream(log io.Writer) *stream { return &stream{log: log} }

// Write takes any part of the stream; complete lines are handled at once.
func (s *stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		s.line(s.partial[:i])
		s.partial = s.partial[i+1:]
	}
	return len(p), nil
}

// flush handles a last line without a newline.
func (s *stream) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(bytes.TrimSpace(s.partial)) > 0 {
		s.line(s.partial)
	}
	s.partial = nil
}

// line handles one message. A line that is not JSON (a tool that ignored
// -json for it) goes to the log as it is.
func (s *stream) line(b []byte) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return
	}
	var m streamMessage
	if b[0] != '{' || json.Unmarshal(b, &m) != nil {
		fmt.Fprintf(s.log, "%s\n", b)
		return
	}
	switch m.Type {
	case "planned_change":
		if m.Change != nil {
			s.changes = append(s.changes, *m.Change)
		}
	case "resource_drift":
		if m.Change != nil {
			s.drift = append(s.drift, *m.Change)
		}
	case "outputs":
		outs := m.Outputs
		if outs == nil {
			outs = map[string]streamOutput{}
		}
		if hasActions(outs) {
			s.planOutputs = outs
		} else {
			s.outputs = outs
		}
	case "diagnostic":
		if d := m.Diagnostic; d != nil {
			text := d.Summary
			if d.Range != nil && d.Range.Filename != "" {
				text += fmt.Sprintf(" (%s line %d)", d.Range.Filename, d.Range.Start.Line)
			}
			if d.Detail != "" {
				text += "\n" + d.Detail
			}
			fmt.Fprintf(s.log, "%s: %s\n", titleCase(d.Severity), text)
			if d.Summary == checkFailedSummary {
				s.checkFailed(d.Snippet, d.Detail)
			}
			if d.Severity == "error" && len(s.errors) < maxErrors {
				s.errors = append(s.errors, "Error: "+text)
			}
			if d.Severity == "error" && s.cause == "" {
				loc := ""
				if d.Range != nil {
					loc = where(d.Range.Filename, d.Range.Start.Line)
				}
				s.cause = diagnosticCause(d.Summary, d.Detail, loc)
			}
			return
		}
	}
	if m.Message != "" {
		fmt.Fprintf(s.log, "%s\n", m.Message)
	}
}

// hasActions tells a plan's outputs message (every output has an action,
// "noop" included) from an apply's (values, no actions).
func hasActions(outs map[string]streamOutput) bool {
	for _, o := range outs {
		if o.Action != "" {
			return true
		}
	}
	return false
}

func titleCase(s string) string {
	if s == "" {
		return "Diagnostic"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// explain adds the tool's error diagnostics to err, the first one in front
// (runner.WithCause): with -json they come on stdout, so the command's
// error (which carries stderr) lacks them.
func (s *stream) explain(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil || len(s.errors) == 0 {
		return err
	}
	return runner.WithCause(fmt.Errorf("%w\n%s", err, strings.Join(s.errors, "\n\n")), s.cause)
}

// plan summarises the stream of plan -json like summarize does a show -json
// of the same plan, except that it cannot name changed attributes (the
// stream does not say) and knows no planned output values.
func (s *stream) plan(refreshOnly bool) runner.Plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out runner.Plan
	changes := s.changes
	if refreshOnly {
		changes = s.drift
	}
	for _, ch := range changes {
		act, ok := streamAction(ch.Action)
		if !ok {
			continue
		}
		count(&out, act)
		out.Resources = append(out.Resources, runner.ResourceChange{Address: ch.Resource.Addr, Action: act})
	}
	sort.SliceStable(out.Resources, func(i, j int) bool { return out.Resources[i].Address < out.Resources[j].Address })
	for name, o := range s.planOutputs {
		if o.Action != "" && o.Action != "noop" {
			out.OutputChanges = append(out.OutputChanges, name)
		}
	}
	sort.Strings(out.OutputChanges)
	return out
}

// streamAction maps the stream's action names to knit's; ok is false for
// no-ops, moves and imports without change.
func streamAction(a string) (runner.Action, bool) {
	switch a {
	case "create":
		return runner.ActionCreate, true
	case "update":
		return runner.ActionUpdate, true
	case "delete":
		return runner.ActionDelete, true
	case "replace":
		return runner.ActionReplace, true
	case "read":
		return runner.ActionRead, true
	case "forget", "remove":
		return ActionForget, true
	}
	return "", false
}

// count adds one resource action to the plan's counts, the way the tool's
// own summary line does.
func count(p *runner.Plan, act runner.Action) {
	switch act {
	case runner.ActionCreate:
		p.Add++
	case runner.ActionUpdate:
		p.Change++
	case runner.ActionDelete:
		p.Destroy++
	case runner.ActionReplace:
		p.Add++
		p.Destroy++
	}
}

// appliedOutputs returns the outputs of apply -json's outputs message; ok
// is false when they are incomplete: a sensitive value is redacted there.
// No outputs message means the configuration has no outputs.
func (s *stream) appliedOutputs() (out runner.Outputs, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out = make(runner.Outputs, len(s.outputs))
	for name, o := range s.outputs {
		if o.Sensitive {
			return nil, false, nil
		}
		var v any
		if len(o.Value) > 0 {
			if err := json.Unmarshal(o.Value, &v); err != nil {
				return nil, false, fmt.Errorf("output %q: %w", name, err)
			}
		}
		out[name] = runner.Output{Value: v}
	}
	return out, true, nil
}

// hasAttributeChanges reports whether a planned change would list changed
// attribute names (updates and replacements), which only show -json gives.
func hasAttributeChanges(p *runner.Plan) bool {
	for _, r := range p.Resources {
		if r.Action == runner.ActionUpdate || r.Action == runner.ActionReplace {
			return true
		}
	}
	return false
}

// streamSnippet is a diagnostic's snippet: Context names the block
// (check "name").
type streamSnippet struct {
	Context string `json:"context"`
}

// checkFailedSummary is the summary of the warning OpenTofu (and
// Terraform) give for a check block's assertion that did not hold.
const checkFailedSummary = "Check block assertion failed"

// checkFailed records a failed check block once. Its name is in the
// snippet's context (check "name"); without one, the message stands alone.
func (s *stream) checkFailed(snippet *streamSnippet, message string) {
	name := "check"
	if snippet != nil {
		if n, ok := strings.CutPrefix(snippet.Context, "check "); ok {
			name = strings.Trim(n, `"`)
		}
	}
	f := runner.CheckFailure{Check: name, Message: message}
	for _, seen := range s.checks {
		if seen == f {
			return
		}
	}
	s.checks = append(s.checks, f)
}

// reportChecks tells c of the check blocks that failed in an apply's stream.
func (s *stream) reportChecks(c runner.Component) {
	s.mu.Lock()
	checks := slices.Clone(s.checks)
	s.mu.Unlock()
	if c.CheckFailed == nil {
		return
	}
	for _, f := range checks {
		c.CheckFailed(f)
	}
}
