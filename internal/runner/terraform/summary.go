package terraform

import (
	"reflect"
	"sort"

	tfjson "github.com/hashicorp/terraform-json"

	"knit.dev/knit/internal/runner"
)

// ActionForget is a resource the plan removes from state without destroying
// it (OpenTofu's removed blocks; words.ActionForget). runner.Plan has no
// count for it, so a plan that only forgets lists resources but has no
// changes.
const ActionForget = runner.ActionForget

// summarize turns the tool's JSON plan (show -json) into knit's Plan, without
// File, Checksum or Destroying. Counting follows the tool's own summary line:
// a replacement counts as one add and one destroy; reads, forgets and no-ops
// are listed or skipped but not counted. For a refresh-only plan the changes
// are the drift the tool found (resource_drift): an object deleted outside
// knit is a delete, one edited an update; applying it only updates state.
func summarize(p *tfjson.Plan, refreshOnly bool) runner.Plan {
	var out runner.Plan
	if p == nil {
		return out
	}
	changes := p.ResourceChanges
	if refreshOnly {
		changes = p.ResourceDrift
	}
	for _, rc := range changes {
		if rc == nil || rc.Change == nil {
			continue
		}
		act, ok := action(rc.Change.Actions)
		if !ok {
			continue
		}
		count(&out, act)
		res := runner.ResourceChange{Address: rc.Address, Action: act,
			Before: masked(rc.Change.Before, rc.Change.BeforeSensitive), After: masked(rc.Change.After, rc.Change.AfterSensitive),
			AfterUnknown: rc.Change.AfterUnknown}
		if rc.DeposedKey != "" {
			res.Address += " (deposed " + rc.DeposedKey + ")"
		}
		if act == runner.ActionUpdate || act == runner.ActionReplace {
			res.Attributes = changedAttributes(rc.Change)
			res.Changes = attributeValues(rc.Change, res.Attributes)
		}
		out.Resources = append(out.Resources, res)
	}
	for name, ch := range p.OutputChanges {
		if ch != nil && len(ch.Actions) > 0 && !ch.Actions.NoOp() {
			out.OutputChanges = append(out.OutputChanges, name)
		}
	}
	sort.Strings(out.OutputChanges)
	out.PlannedOutputs = plannedOutputs(p)
	return out
}

// plannedOutputs returns the outputs whose value the plan knows in full.
// An output with any part unknown until apply (after_unknown other than
// false) is left out.
func plannedOutputs(p *tfjson.Plan) runner.Outputs {
	outs := runner.Outputs{}
	if p.PlannedValues == nil {
		return outs
	}
	for name, o := range p.PlannedValues.Outputs {
		if o == nil {
			continue
		}
		if ch := p.OutputChanges[name]; ch != nil && ch.AfterUnknown != nil && ch.AfterUnknown != false {
			continue
		}
		outs[name] = runner.Output{Value: o.Value, Sensitive: o.Sensitive}
	}
	return outs
}

// action maps the tool's action list to knit's; ok is false for no-ops.
func action(a tfjson.Actions) (runner.Action, bool) {
	switch {
	case a.Create():
		return runner.ActionCreate, true
	case a.Update():
		return runner.ActionUpdate, true
	case a.Delete():
		return runner.ActionDelete, true
	case a.Replace():
		return runner.ActionReplace, true
	case a.Read():
		return runner.ActionRead, true
	case a.Forget():
		return ActionForget, true
	}
	return "", false
}

// changedAttributes names the top-level attributes whose value differs
// between before and after, or is unknown until apply. attributeValues
// copies their values out, sensitive ones masked.
func changedAttributes(ch *tfjson.Change) []string {
	before, _ := ch.Before.(map[string]any)
	after, _ := ch.After.(map[string]any)
	unknown, _ := ch.AfterUnknown.(map[string]any)
	seen := map[string]bool{}
	for _, m := range []map[string]any{before, after, unknown} {
		for k := range m {
			seen[k] = true
		}
	}
	var out []string
	for k := range seen {
		if unknown[k] == true || !reflect.DeepEqual(before[k], after[k]) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
