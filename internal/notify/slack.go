package notify

import (
	"strings"
	"time"
)

// slackMessage is a Slack incoming-webhook payload: Text is the plain
// fallback shown in notifications, Blocks the formatted message.
type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// slackTitles gives each kind an emoji and a heading.
var slackTitles = map[Kind][2]string{
	KindRunFailed:               {":x:", "Run failed"},
	KindRunSucceeded:            {":white_check_mark:", "Run succeeded"},
	KindDriftFound:              {":warning:", "Drift found"},
	KindApprovalNeeded:          {":hand:", "Approval needed"},
	KindTeardownDone:            {":wastebasket:", "Teardown done"},
	KindInvalidRevision:         {":no_entry:", "Invalid commit"},
	KindTTLExpiring:             {":hourglass:", "Environment expiring"},
	KindPreviewReady:            {":mag:", "Preview ready"},
	KindRolloutFailed:           {":rotating_light:", "Rollout failed verification"},
	KindRollbackDone:            {":rewind:", "Rolled back"},
	KindDriftResolved:           {":white_check_mark:", "In sync again"},
	KindReleaseAwaitingApproval: {":hand:", "Release awaits approval"},
	KindReleaseWindowClosed:     {":clock3:", "Release waits for a window"},
	KindReleaseVerified:         {":white_check_mark:", "Release verified"},
	KindReleaseFailed:           {":x:", "Release failed"},
	KindStagePending:            {":memo:", "Stage change waits for approval"},
	KindRolloutStep:             {":footprints:", "Rollout step"},
	KindRolloutAborted:          {":leftwards_arrow_with_hook:", "Rollout aborted"},
	KindRolloutPromoted:         {":rocket:", "Rollout promoted"},
}

// maxSlackSummary keeps a section under Slack's 3000-character limit.
const maxSlackSummary = 2500

// newSlackMessage renders ev for people reading a Slack channel. Text from
// the event is escaped so it cannot form links or mentions.
func newSlackMessage(ev Event) slackMessage {
	t := slackTitles[ev.Kind]
	summary := truncate(ev.Summary, maxSlackSummary)

	head := t[0] + " *" + t[1] + "* in `" + slackEscape(ev.Env) + "`"
	if summary != "" {
		head += "\n" + slackEscape(summary)
	}
	if ev.URL != "" {
		head += "\n<" + slackLinkEscape(ev.URL) + "|Open in knit>"
	}

	var facts []string
	if ev.RunID != "" {
		facts = append(facts, "run `"+slackEscape(ev.RunID)+"`")
	}
	if ev.Component != "" {
		facts = append(facts, "component `"+slackEscape(ev.Component)+"`")
	}
	if ev.Actor != "" {
		facts = append(facts, "by "+slackEscape(ev.Actor))
	}
	facts = append(facts, ev.Time.UTC().Format(time.RFC3339))

	text := t[1] + " in " + slackEscape(ev.Env)
	if summary != "" {
		text += ": " + slackEscape(summary)
	}
	return slackMessage{
		Text: text,
		Blocks: []slackBlock{
			{Type: "section", Text: &slackText{Type: "mrkdwn", Text: head}},
			{Type: "context", Elements: []slackText{{Type: "mrkdwn", Text: strings.Join(facts, " · ")}}},
		},
	}
}

// slackEscape escapes the three characters Slack's mrkdwn treats as markup.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace

// slackLinkEscape keeps a URL from closing or relabelling its <url|label>.
var slackLinkEscape = strings.NewReplacer("|", "%7C", "<", "%3C", ">", "%3E", " ", "%20").Replace

// truncate shortens s to at most n runes, marking the cut with an ellipsis.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
