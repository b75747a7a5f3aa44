package knit

import (
	"fmt"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/view"
)

// releaseApproval is a stage's approval rule applied to one release. A
// stage that requires another approver trusts a release's author only
// when it is authenticated (store.Release.AuthorVerified): that author's
// approval is refused and does not count. A release whose author is the
// name an unsigned commit claims could be anyone's, its claimed author's
// approval proves nothing either way: every distinct token's approval
// counts, and it takes one more than the stage requires (two for
// required: 1), since any one of them may be its real author.
type releaseApproval struct {
	stage    string
	required int  // approvals of distinct actors that let the release in
	other    bool // the stage requires another approver than the author
	author   string
	verified bool
}

// approvalOf is st's approval rule for r.
func approvalOf(st spec.Stage, r *view.ReleaseRecord) releaseApproval {
	a := releaseApproval{stage: st.Name, author: r.Author, verified: r.AuthorVerified}
	if st.Approval == nil || st.Approval.Required <= 0 {
		return a
	}
	a.required, a.other = st.Approval.Required, st.Approval.RequireOtherApprover
	if a.other && !a.verified {
		a.required++
	}
	return a
}

// ownRelease reports whether actor's approval is refused: actor is the
// release's verified author, in a stage that requires another approver.
func (a releaseApproval) ownRelease(actor string) bool {
	return a.other && a.verified && actor == a.author
}

// counts reports whether actor's approval counts toward a.required.
func (a releaseApproval) counts(actor string) bool { return !a.ownRelease(actor) }

// view is the rule as the API shows it (nil: the stage takes no approval).
func (a releaseApproval) view() *view.WaitApproval {
	if a.required == 0 {
		return nil
	}
	return &view.WaitApproval{Required: a.required, Author: a.author, AuthorVerified: a.verified}
}

// waitMessage says why the release waits with given approvals counted.
func (a releaseApproval) waitMessage(given int) string {
	msg := fmt.Sprintf("%d of %d approvals", given, a.required)
	switch {
	case a.other && a.verified:
		msg += " by someone other than its author, " + a.author
	case a.other:
		msg += fmt.Sprintf(" by distinct tokens: its author, %q, is the name its commit claims (no signature verified against the server's trusted keys), so %s takes one approver more than its %d, any of whom may be the author",
			a.author, a.stage, a.required-1)
	}
	return msg
}
