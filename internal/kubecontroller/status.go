package kubecontroller

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/store"
)

// Condition types of an Environment, as Flux and kstatus name them.
const (
	CondReady            = "Ready"
	CondReconciling      = "Reconciling"
	CondAwaitingApproval = "AwaitingApproval"
	CondDrifted          = "Drifted"
	CondStalled          = "Stalled"
	// CondApproved is an EnvironmentApproval's.
	CondApproved = "Approved"
)

// Reasons of the conditions. Where a component's state says why, the
// reason is the engine's code (engine.Reason: AwaitingApproval, Drifted,
// ToolFailed, PolicyDenied, Refused, …), the one the API and the CLI
// report; these are the controller's own, for what no component says.
const (
	ReasonApplied            = "Applied"            // Ready: the generation is applied
	ReasonInSync             = "InSync"             // Drifted False: a re-plan found nothing
	ReasonProgressing        = "Progressing"        // Reconciling: a run is going on
	ReasonIdle               = "Idle"               // Reconciling False: no run is going on
	ReasonNothingWaiting     = "NothingWaiting"     // AwaitingApproval False
	ReasonInvalidSpec        = "InvalidSpec"        // Stalled: the spec does not read as an environment file
	ReasonRunFailed          = "RunFailed"          // Stalled: the run failed as a whole (store, lock)
	ReasonOwnedElsewhere     = "OwnedElsewhere"     // Stalled: the environment is another object's, or GitOps' or the CLI's
	ReasonOtherTeam          = "OtherTeam"          // Stalled: the object names a team its namespace does not act for
	ReasonRolledBack         = "RolledBack"         // Stalled: the generation failed verification and was rolled back
	ReasonNamespaceNotMapped = "NamespaceNotMapped" // Stalled: the namespace acts for no team
	ReasonChecksumMismatch   = "ChecksumMismatch"   // Approved False: another plan waits
	ReasonNoPlanWaiting      = "NoPlanWaiting"      // Approved False: nothing waits for approval
	ReasonApproved           = "Approved"           // Approved True
	ReasonTearingDown        = "TearingDown"        // Ready False while the object is deleted
	ReasonTornDown           = "TornDown"           // the teardown succeeded
)

// setCondition sets one condition for generation gen.
func setCondition(conds *[]metav1.Condition, gen int64, typ string, status bool, reason, msg string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: limit(msg), ObservedGeneration: gen})
}

// limit keeps a message within what the API server takes (32 KiB).
func limit(msg string) string {
	if len(msg) > 4096 {
		return msg[:4093] + "..."
	}
	return msg
}

// isTrue reports whether condition typ is True.
func isTrue(conds []metav1.Condition, typ string) bool {
	return meta.IsStatusConditionTrue(conds, typ)
}

// reconciling marks a run as started.
func reconciling(st *EnvironmentStatus, gen int64, what string) {
	setCondition(&st.Conditions, gen, CondReconciling, true, ReasonProgressing, what)
}

// stalled records a problem no run can fix by itself: the Environment
// must change (or the cluster, a ConfigMap it names).
func stalled(st *EnvironmentStatus, gen int64, reason, msg string) {
	st.ObservedGeneration = gen
	setCondition(&st.Conditions, gen, CondStalled, true, reason, msg)
	setCondition(&st.Conditions, gen, CondReady, false, reason, msg)
	setCondition(&st.Conditions, gen, CondReconciling, false, ReasonIdle, "stalled: "+msg)
}

// fromResult records what a run did: the components as it left them and
// the five conditions.
func fromResult(st *EnvironmentStatus, gen int64, res *engine.Result, runErr error) {
	st.ObservedGeneration = gen
	if res == nil {
		msg := "the run failed"
		if runErr != nil {
			msg = runErr.Error()
		}
		stalled(st, gen, ReasonRunFailed, msg)
		return
	}
	st.LastRun, st.Env = res.RunID, res.Env
	st.Components = components(res)
	st.Approval = nil
	if res.Awaiting() && res.ChangeSet != nil {
		st.Approval = &PendingApproval{Checksum: res.ChangeSet.Checksum, Teardown: res.Kind == engine.KindTeardown}
		for _, c := range res.ChangeSet.Components {
			if c.ApprovalID != 0 {
				st.Approval.Components = append(st.Approval.Components, c.Component)
			}
		}
	}
	setCondition(&st.Conditions, gen, CondReconciling, false, ReasonIdle, fmt.Sprintf("run %s (%s) %s", res.RunID, res.Kind, res.Status))

	// Stalled: a component failed, was refused or skipped: the reason of
	// the first, as the engine gives it.
	if bad := firstWith(res, func(c *engine.ComponentResult) bool { return c.Status.IsError() }); bad != nil || runErr != nil {
		reason, msg := ReasonRunFailed, ""
		if bad != nil {
			reason = orReason(bad.ReasonCode, ReasonRunFailed)
			msg = fmt.Sprintf("component %s %s: %s", bad.Name, bad.Status, firstLine(bad.Reason))
		}
		if runErr != nil && msg == "" {
			msg = runErr.Error()
		}
		setCondition(&st.Conditions, gen, CondStalled, true, reason, msg)
		setCondition(&st.Conditions, gen, CondReady, false, reason, msg)
	} else {
		setCondition(&st.Conditions, gen, CondStalled, false, ReasonIdle, "no component failed")
	}

	// AwaitingApproval: the checksum an EnvironmentApproval must name.
	if st.Approval != nil {
		msg := fmt.Sprintf("the plan of %s waits for approval: create an EnvironmentApproval with checksum %s",
			strings.Join(st.Approval.Components, ", "), st.Approval.Checksum)
		setCondition(&st.Conditions, gen, CondAwaitingApproval, true, string(engine.ReasonAwaitingApproval), msg)
		if !isTrue(st.Conditions, CondStalled) {
			setCondition(&st.Conditions, gen, CondReady, false, string(engine.ReasonAwaitingApproval), msg)
		}
	} else {
		setCondition(&st.Conditions, gen, CondAwaitingApproval, false, ReasonNothingWaiting, "no plan waits for approval")
	}

	// Drifted: a drift run's finding; an apply brings reality back.
	switch res.Kind {
	case engine.KindDrift:
		var drifted []string
		reason := string(engine.ReasonDrifted)
		for _, c := range res.Components {
			if c.Drift == engine.Drifted || c.Drift == engine.Affected || c.Status == engine.Drifted || c.Status == engine.Affected {
				drifted = append(drifted, c.Name)
				if c.ReasonCode == string(engine.ReasonUpstreamDrifted) && len(drifted) == 1 {
					reason = c.ReasonCode
				}
			}
		}
		if len(drifted) > 0 {
			msg := fmt.Sprintf("reality differs from the applied spec: %s (run %s; knit drift %s shows the changes)", strings.Join(drifted, ", "), res.RunID, res.Env)
			setCondition(&st.Conditions, gen, CondDrifted, true, reason, msg)
			if !isTrue(st.Conditions, CondStalled) && st.Approval == nil {
				setCondition(&st.Conditions, gen, CondReady, false, reason, msg)
			}
		} else {
			setCondition(&st.Conditions, gen, CondDrifted, false, ReasonInSync, "a re-plan found no change")
		}
	case engine.KindApply:
		if !res.Failed() && !res.Awaiting() {
			setCondition(&st.Conditions, gen, CondDrifted, false, ReasonApplied, "applied by run "+res.RunID)
		}
	}
	if !isTrue(st.Conditions, CondStalled) && st.Approval == nil && !isTrue(st.Conditions, CondDrifted) {
		msg := fmt.Sprintf("generation %d applied: %d components (run %s)", gen, len(res.Components), res.RunID)
		if res.Kind == engine.KindTeardown {
			setCondition(&st.Conditions, gen, CondReady, false, ReasonTornDown, "torn down by run "+res.RunID)
		} else {
			setCondition(&st.Conditions, gen, CondReady, true, ReasonApplied, msg)
		}
	}
}

// components lists the components as a run left them, by name.
func components(res *engine.Result) []ComponentStatus {
	out := make([]ComponentStatus, 0, len(res.Components))
	checksums := map[string]string{}
	if res.ChangeSet != nil {
		for _, c := range res.ChangeSet.Components {
			checksums[c.Component] = c.PlanChecksum
		}
	}
	for _, c := range res.Components {
		out = append(out, ComponentStatus{Name: c.Name, Status: string(c.Status), Reason: c.ReasonCode,
			Message: limit(firstLine(c.Reason)), Upstream: c.Upstream, PlanChecksum: checksums[c.Name]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func firstWith(res *engine.Result, ok func(*engine.ComponentResult) bool) *engine.ComponentResult {
	for _, c := range res.Components {
		if ok(c) {
			return c
		}
	}
	return nil
}

func orReason(r, def string) string {
	if r == "" {
		return def
	}
	return r
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// succeeded reports whether a run left nothing failed or waiting.
func succeeded(res *engine.Result) bool {
	return res != nil && !res.Failed() && !res.Awaiting() && res.Status != store.StatusFailed
}
