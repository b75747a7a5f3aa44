package knit

import (
	"fmt"
	"strings"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/view"
)

// PreviewMarkdown is the summary of a branch commit's previews that a CI
// job posts as a pull request's comment: a table per environment with
// each component's changes (~changed +added -destroyed), then the
// policies' denials and warnings, and why a preview failed.
//
// Everything in it that a branch controls (its name, environment and
// component names, policy messages, errors that quote the branch's files
// or tools) renders as text: HTML, images, links, emphasis, code and
// @mentions are escaped (mdText), or kept inside code spans (mdCode).
func PreviewMarkdown(branch, commit string, ps []view.Preview) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### knit preview of %s at %s\n\n", mdCode(branch), mdCode(shortHash(commit)))
	if len(ps) == 0 {
		b.WriteString("No environment changes.\n")
	}
	for _, p := range ps {
		add, change, destroy := p.Totals()
		fmt.Fprintf(&b, "#### %s (%s): %s\n\n", mdCode(p.Env), mdText(p.Change), mdText(p.Status))
		if p.Error != "" {
			lines := strings.Split(strings.TrimSpace(p.Error), "\n")
			for i, l := range lines {
				lines[i] = mdText(l)
			}
			fmt.Fprintf(&b, "> %s\n\n", strings.Join(lines, "\n> "))
		}
		if len(p.Components) > 0 {
			b.WriteString("| component | status | changes |\n|---|---|---|\n")
			for _, c := range p.Components {
				fmt.Fprintf(&b, "| %s | %s | %s |\n", mdText(c.Name), mdText(c.Status), c.Counts())
			}
			fmt.Fprintf(&b, "| **total** | | ~%d +%d -%d |\n\n", change, add, destroy)
		}
		for _, c := range p.Components {
			if len(c.Placeholders) > 0 {
				fmt.Fprintf(&b, "- %s planned with placeholders for its sensitive inputs: %s\n", mdText(c.Name), mdText(strings.Join(c.Placeholders, ", ")))
			}
			if len(c.PlannedAhead) > 0 {
				fmt.Fprintf(&b, "- %s planned ahead with placeholders for inputs known only after apply: %s (its values are shown after the merge's apply)\n",
					mdText(c.Name), mdText(strings.Join(c.PlannedAhead, ", ")))
			}
		}
		for _, d := range p.Decisions {
			word := map[string]string{engine.DecisionDeny: "**denied**", engine.DecisionWarn: "warning",
				engine.DecisionRequireApproval: "requires approval"}[d.Kind]
			fmt.Fprintf(&b, "- %s: %s (%s %s)\n", word, mdText(d.Message), mdCode(fmt.Sprintf("%s:%d", d.File, d.Line)), mdText(d.Rule))
		}
		if len(p.Decisions) > 0 {
			b.WriteString("\n")
		}
		if p.Checksum != "" {
			fmt.Fprintf(&b, "Plan checksum %s\n\n", mdCode(p.Checksum))
		}
	}
	return b.String()
}

// mdEscaper makes text render as itself in GitHub's and GitLab's Markdown
// (one line, inside a table cell): HTML's characters become entities, so
// no tag, comment or entity of the text's own survives; every Markdown
// punctuation character is backslash-escaped (links, images, emphasis,
// code spans, headings, lists, tables); "@" becomes an entity so that no
// one is mentioned; line breaks become spaces.
var mdEscaper = func() *strings.Replacer {
	pairs := []string{"&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "@", "&#64;",
		"\r\n", " ", "\n", " ", "\r", " "}
	for _, c := range "\\`*_{}[]()#+-.!|~:$=" {
		pairs = append(pairs, string(c), `\`+string(c))
	}
	return strings.NewReplacer(pairs...)
}()

// mdText is s as Markdown text that renders as s (see mdEscaper).
func mdText(s string) string { return mdEscaper.Replace(s) }

// mdCode is s as a code span: rendered as written, never as Markdown or
// HTML. A backtick in s would end the span, a line break or "|" the table
// row: they are replaced.
func mdCode(s string) string {
	return "`" + strings.NewReplacer("`", "'", "|", "¦", "\n", " ", "\r", " ").Replace(s) + "`"
}

func shortHash(h string) string { return h[:min(10, len(h))] }

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
