package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/view"
	"knit.dev/knit/internal/words"
)

func newPipelineCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "pipeline", Short: "Promotion pipelines (kind: Pipeline, followed by knit serve --pipeline)"}
	var output string
	status := &cobra.Command{
		Use:   "status PIPELINE",
		Short: "Which release is in which stage and, for one that waits, why",
		Long: `Each stage, left to right: the release it holds (the newest verified there), the last
one tried there, and the release next in line with why it waits: Soaking, WindowClosed,
AwaitingApproval, VerificationFailed (it failed there and never moves on), ApplyFailed,
Applying, or Ready (the server applies it now). Below, each stage whose own file a merged
commit changed and that change is not applied yet: Pending (waiting for approvals: knit
promote PIPELINE --change C --to STAGE), Queued, Applying or Failed, with its diff.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				p, err := b.PipelineStatus(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return render(d.stdout, output, p, printPipeline)
			})
		},
	}
	outputFlag(status, &output)
	var reason string
	rollback := &cobra.Command{
		Use:   "rollback PIPELINE STAGE",
		Short: "Apply again the release a stage verified before its current one",
		Long: `The server's promotion controller applies it through the run queue, as a new revision
of the stage's environment (operators; audited). knit pipeline status shows which release
a rollback would apply (rollbackTo in -o json).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				st, err := b.RollbackStage(cmd.Context(), args[0], args[1], d.actor(), reason)
				if err != nil {
					return err
				}
				return render(d.stdout, output, st, printStage)
			})
		},
	}
	outputFlag(rollback, &output)
	rollback.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	cmd.AddCommand(status, rollback, newPipelinePlanCmd(d))
	return cmd
}

func newPipelinePlanCmd(d *deps) *cobra.Command {
	var output, release string
	var stages []string
	cmd := &cobra.Command{
		Use:   "plan PIPELINE --release R [--stage STAGE]...",
		Short: "What a release would change in each stage: a plan per stage, applying nothing",
		Long: `Plans release R (knit releases PIPELINE lists them) in every stage, or only those
named: each stage's environment as the server would apply R there (the stage's file at R's
commit, with R's promote parameters), against what the environment has applied, judged by
the policies its apply would be. Nothing is applied and no revision is recorded; a stage
whose environment another run holds says locked. It asks the server that follows the
pipeline (--server URL; operators), which has the repository.`,
		Example: `  knit pipeline plan web --release r-3f2a9c1b --server https://knit.example.com
  knit pipeline plan web --release r-3f2a9c1b --stage prod -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if release == "" {
				return fmt.Errorf("--release is required: knit releases %s lists them", args[0])
			}
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				p, err := b.PlanRelease(cmd.Context(), args[0], release, stages, d.actor())
				if err != nil {
					return err
				}
				return render(d.stdout, output, p, printReleasePlan)
			})
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&release, "release", "", "the release to plan (required)")
	cmd.Flags().StringArrayVar(&stages, "stage", nil, "only this stage (repeatable; default every stage)")
	return cmd
}

func printReleasePlan(w io.Writer, p view.ReleasePlan) {
	fmt.Fprintf(w, "release %s of pipeline %s (commit %s): nothing applied\n", p.Release, p.Pipeline, shortHash(p.Commit))
	for _, s := range p.Stages {
		add, change, destroy := s.Totals()
		holds := "holds no release"
		if s.Current != "" {
			holds = "holds " + s.Current
		}
		fmt.Fprintf(w, "stage %s (%s, %s): %s", s.Stage, s.Env, holds, s.Status)
		if s.Status == view.StagePlanned {
			fmt.Fprintf(w, ", ~%d +%d -%d", change, add, destroy)
		}
		fmt.Fprintln(w)
		if s.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", firstLine(s.Error))
		}
		printPlanned(w, s.Components, s.Decisions)
	}
}

func printPipeline(w io.Writer, p view.Pipeline) {
	fmt.Fprintf(w, "pipeline %s (team %s, commit %s)\n", p.Name, p.Team, shortHash(p.Commit))
	rows := [][]string{{"STAGE", "ENV", "ENV STATUS", "GATES", "CURRENT", "LAST", "WAITING", "REASON", "WHY"}}
	for _, s := range p.Stages {
		cur, last, waiting, reason, why, status, gates := "-", "-", "-", "-", "", "-", "-"
		if g := s.Gates(); g != "" {
			gates = g
		}
		if s.EnvStatus != "" {
			status = engine.EnvLabel(s.EnvStatus)
		}
		if s.Current != nil {
			cur = s.Current.Release
		}
		if s.Last != nil {
			last = s.Last.Release + " " + s.Last.State
		}
		if s.Waiting != nil {
			waiting, reason, why = s.Waiting.Release, s.Waiting.Reason, s.Waiting.Message
			if !s.Waiting.Until.IsZero() {
				why += fmt.Sprintf(" (%s left)", time.Until(s.Waiting.Until).Round(time.Second))
			}
		}
		rows = append(rows, []string{s.Name, s.Env, status, gates, cur, last, waiting, reason, oneLine(why)})
	}
	tw := newTable(w)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	printStageChanges(w, p)
}

func newReleasesCmd(d *deps) *cobra.Command {
	var output, stage string
	cmd := &cobra.Command{
		Use:   "releases PIPELINE [--stage STAGE]",
		Short: "A pipeline's releases and their history: commit, author, stages, runs, approvals",
		Long: `Lists releases newest first. With --stage prod, only the releases that reached prod,
the first being what prod runs: its commit and author, when each stage applied and verified
it (with the runs), and who approved it — why prod is on that version, in one command.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				rs, err := b.Releases(cmd.Context(), args[0], stage)
				if err != nil {
					return err
				}
				return render(d.stdout, output, rs, printReleases)
			})
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&stage, "stage", "", "only releases that reached this stage")
	return cmd
}

func printReleases(w io.Writer, rs []view.Release) {
	if len(rs) == 0 {
		fmt.Fprintln(w, "no releases")
		return
	}
	for _, r := range rs {
		author := r.Author
		if !r.AuthorVerified {
			author += " (unverified: the name its commit claims)"
		}
		fmt.Fprintf(w, "%s  %s  commit %s by %s: %s\n", r.ID, string(r.Params), shortHash(r.Commit), author, r.Message)
		for _, e := range r.History {
			line := fmt.Sprintf("  %s  %-8s %-10s", e.At.Local().Format(time.DateTime), e.Stage, e.State)
			rolledBack := e.RolledBack()
			if e.RunID != "" && !rolledBack { // a rollback's run is not the one that failed: the message names both
				line += " run " + e.RunID
			}
			if e.Reason != "" {
				line += " " + e.Reason
			}
			if (rolledBack || e.State == string(words.StageQueued)) && e.Message != "" { // who, and why
				line += ": " + e.Message
			}
			fmt.Fprintln(w, line)
		}
		for _, a := range r.Approvals {
			fmt.Fprintf(w, "  %s  %-8s approved by %s\n", a.At.Local().Format(time.DateTime), a.Stage, a.Actor)
		}
	}
}

func newPromoteCmd(d *deps) *cobra.Command {
	var output, release, change, to, reason string
	var force bool
	cmd := &cobra.Command{
		Use:   "promote PIPELINE (--release R | --change C) --to STAGE [--force]",
		Short: "Approve a release entering a stage; the server applies it once every gate is open",
		Long: `Within the server's own rules: the release must be verified in the stage before, its
soak over and the stage's window open; a stage that requires approvals takes yours. Where
the stage requires another approver, the release's verified author (the token that made it,
or the signer of a commit whose signature verified) is refused, and a release whose author
is only the name an unsigned commit claims takes one approver more (two distinct tokens for one).
--force (an admin) passes every gate; it is audited. A release that failed in the stage
(a health endpoint down once) starts there again: the same release, no new commit, its
window and approvals as before (or --force); refused while another release applies there or
once a newer one was tried. Exit 0 when the release is Ready or applying, 3 while it waits.

--change C approves the pending change C of the stage's own file (a merged commit that changed
the file the stage names; knit pipeline status shows it, with its diff): the same approval
rules, with the commit's author as the release's; once approved the server applies it to the
release the stage runs. A change whose run failed starts again. Exit 3 while it still waits.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (release == "") == (change == "") || to == "" {
				return fmt.Errorf("--to and one of --release or --change are required: knit releases %s lists releases, knit pipeline status %s the changes of stage files", args[0], args[0])
			}
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				st, err := b.Promote(cmd.Context(), args[0], release, change, to, d.actor(), reason, force)
				if err != nil {
					return err
				}
				if err := render(d.stdout, output, st, printStage); err != nil {
					return err
				}
				if c := st.StageChange; change != "" && c != nil && c.ID == change && c.Reason == view.WaitAwaitingApproval {
					return &ExitError{Code: ExitApproval}
				}
				if release != "" && st.Waiting != nil && st.Waiting.Release == release && st.Waiting.Reason != view.WaitReady && st.Waiting.Reason != view.WaitApplying {
					return &ExitError{Code: ExitApproval}
				}
				return nil
			})
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&release, "release", "", "the release (knit releases PIPELINE)")
	cmd.Flags().StringVar(&change, "change", "", "a pending change of the stage's own file, c-… (knit pipeline status PIPELINE)")
	cmd.Flags().StringVar(&to, "to", "", "the stage")
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	cmd.Flags().BoolVar(&force, "force", false, "pass every gate (admin; audited)")
	return cmd
}

func printStage(w io.Writer, s view.Stage) {
	switch {
	case s.Waiting == nil:
		fmt.Fprintf(w, "%s: nothing waits\n", s.Name)
	default:
		fmt.Fprintf(w, "%s: %s %s: %s\n", s.Name, s.Waiting.Release, s.Waiting.Reason, s.Waiting.Message)
	}
	if c := s.StageChange; c != nil && c.State != view.StageChangeApplied {
		fmt.Fprintf(w, "%s: stage change %s %s: %s\n", s.Name, c.ID, c.State, oneLine(c.Message))
	}
}

// printStageChanges prints each stage's change of its own file that is
// not applied yet: who made it, where it stands, and its diff.
func printStageChanges(w io.Writer, p view.Pipeline) {
	for _, s := range p.Stages {
		c := s.StageChange
		if c == nil || c.State == view.StageChangeApplied {
			continue
		}
		author := c.Author
		if !c.AuthorVerified {
			author += " (unverified)"
		}
		fmt.Fprintf(w, "\nstage %s: change %s %s (applyStageChanges: %s), commit %s by %s: %s\n", s.Name, c.ID, c.State,
			s.ApplyStageChanges, shortHash(c.Commit), author, c.Subject)
		if c.Message != "" {
			fmt.Fprintf(w, "  %s: %s\n", c.Reason, oneLine(c.Message))
		}
		for _, l := range strings.Split(strings.TrimRight(c.Diff, "\n"), "\n") {
			fmt.Fprintln(w, "  "+l)
		}
	}
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
