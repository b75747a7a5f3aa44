package promotion

import (
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/view"
)

// authorOf is who made a release from commit c: the signer when its
// signature verified against keys the server trusts (verified), else the
// name it claims, which git lets anyone write (not verified).
func authorOf(c gitwatch.Commit) (author string, verified bool) {
	if c.Signer != "" {
		return c.Signer, true
	}
	return c.Author, false
}

// SourcePipeline is the source of a run applying a release whose author
// is verified; a release whose author is only claimed is applied by runs
// of source knit.SourceGit, as an unsigned commit's change.
const SourcePipeline = "pipeline"

// runAuthor is the actor and source of a run applying r: the change is
// its release's, so a stage environment requiring another approver
// judges approvals of its plans by the release's author, trusted as far
// as it is verified (an unverified one takes two distinct approvers).
func runAuthor(r view.ReleaseRecord) (actor, source string) {
	if r.AuthorVerified {
		return r.Author, SourcePipeline
	}
	return r.Author, knit.SourceGit
}
