package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// pageSize is how many environments one page of the list shows.
const pageSize = 50

// envStates are the states the list can be filtered by (store statuses),
// each named as the list shows it.
var envStates = func() []struct{ Value, Label string } {
	states := []struct{ Value, Label string }{{"", "any state"}}
	for _, st := range []store.EnvStatus{engine.EnvApplied, engine.EnvFailed, engine.EnvAwaiting, engine.EnvRejected, engine.EnvDrifted, engine.EnvTornDown, engine.EnvInterrupted} {
		states = append(states, struct{ Value, Label string }{string(st), engine.EnvLabel(st)})
	}
	return states
}()

// envSorts are the orders the list can be sorted in.
var envSorts = []struct{ Value, Label string }{
	{"name", "team/name"}, {"state", "state"}, {"updated", "last change, newest first"},
}

// envRow is one row of the environments list.
type envRow struct {
	ID, Team, Name  string
	State           string
	Tone            Tone
	LastRun         *store.Run
	LastRunTone     Tone
	Drift           *knit.DriftView
	Counts          []stateCount
	AppliedRevision int
	Commit          string
	UpdatedAt       time.Time
	// Invalid is the newest revision when its file does not validate.
	Invalid *knit.InvalidRevision
}

type stateCount struct {
	State string
	Tone  Tone
	N     int
}

type envListPage struct {
	Team, State, Sort string
	States, Sorts     []struct{ Value, Label string }
	Teams             []string
	Rows              []envRow
	Total             int
	PageNo, Pages     int
	First, Last       int
	Prev, Next        string
	Self              string   // this page's URL, re-fetched on live updates
	Range             string   // by name: the first and last environment shown
	Live              string   // the live stream, from the state this page shows
	Invalid           []envRow // the rows whose newest revision is invalid, for the banner
}

// environments is the list: filtered, sorted and paged on the server.
func (w *Web) environments(rw http.ResponseWriter, r *http.Request, s *session) {
	p, err := w.envList(r.Context(), s, r.URL.Query())
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	w.render(rw, r, s, http.StatusOK, "environments", "Environments", "envs", p)
}

func (w *Web) envList(ctx context.Context, s *session, q url.Values) (envListPage, error) {
	p := envListPage{Team: q.Get("team"), State: q.Get("state"), Sort: q.Get("sort"), States: envStates, Sorts: envSorts,
		Live: "/live?since=" + w.allMark(ctx)}
	if p.Sort == "" {
		p.Sort = "name"
	}
	p.Teams = w.teams(ctx, s)
	link := func(extra url.Values) string {
		v := url.Values{}
		for k, x := range map[string]string{"team": p.Team, "state": p.State, "sort": p.Sort} {
			if x != "" && !(k == "sort" && x == "name") {
				v.Set(k, x)
			}
		}
		for k, x := range extra {
			v[k] = x
		}
		if len(v) == 0 {
			return "/"
		}
		return "/?" + v.Encode()
	}
	var rows []store.Environment
	var err error
	if p.Sort == "name" {
		rows, err = w.envPageByName(ctx, s, &p, q.Get("after"), link)
	} else {
		rows, err = w.envPageSorted(ctx, s, &p, q.Get("page"), link)
	}
	if err != nil {
		return p, err
	}
	for _, e := range rows {
		row, err := w.envRow(ctx, e)
		if err != nil {
			return p, err
		}
		p.Rows = append(p.Rows, row)
		if row.Invalid != nil {
			p.Invalid = append(p.Invalid, row)
		}
	}
	return p, nil
}

// envPageByName reads one page in ID order straight from the store's index,
// after a cursor: its cost does not grow with the number of environments.
func (w *Web) envPageByName(ctx context.Context, s *session, p *envListPage, after string, link func(url.Values) string) ([]store.Environment, error) {
	p.Self = link(url.Values{"after": {after}})
	if after == "" {
		p.Self = link(nil)
	} else {
		p.Prev = link(nil)
	}
	rows, err := w.k.EnvironmentRecords(ctx, knit.EnvironmentFilter{Team: p.Team, Status: p.State, After: after, Limit: pageSize + 1})
	if err != nil {
		return nil, err
	}
	if len(rows) > pageSize {
		rows = rows[:pageSize]
		p.Next = link(url.Values{"after": {rows[pageSize-1].ID}})
	}
	if len(rows) > 0 {
		p.Range = fmt.Sprintf("%s to %s", rows[0].ID, rows[len(rows)-1].ID)
	}
	return rows, nil
}

// envPageSorted sorts every matching environment and cuts out one numbered page.
func (w *Web) envPageSorted(ctx context.Context, s *session, p *envListPage, page string, link func(url.Values) string) ([]store.Environment, error) {
	visible, err := w.k.EnvironmentRecords(ctx, knit.EnvironmentFilter{Team: p.Team, Status: p.State})
	if err != nil {
		return nil, err
	}
	sortEnvs(visible, p.Sort)
	p.Total = len(visible)
	p.Pages = max(1, (p.Total+pageSize-1)/pageSize)
	p.PageNo, _ = strconv.Atoi(page)
	p.PageNo = min(max(p.PageNo, 1), p.Pages)
	lo, hi := (p.PageNo-1)*pageSize, min(p.PageNo*pageSize, p.Total)
	p.First, p.Last = lo+1, hi
	num := func(n int) string { return link(url.Values{"page": {strconv.Itoa(n)}}) }
	p.Self = num(p.PageNo)
	if p.PageNo > 1 {
		p.Prev = num(p.PageNo - 1)
	}
	if p.PageNo < p.Pages {
		p.Next = num(p.PageNo + 1)
	}
	return visible[lo:hi], nil
}

func sortEnvs(envs []store.Environment, by string) {
	slices.SortStableFunc(envs, func(a, b store.Environment) int {
		switch by {
		case "state":
			if c := cmp.Compare(a.Status, b.Status); c != 0 {
				return c
			}
		case "updated":
			if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// teamsTTL is how long the list of teams is reused: reading it scans
// every environment.
const teamsTTL = 30 * time.Second

// teams lists the teams the session may filter by.
func (w *Web) teams(ctx context.Context, s *session) []string {
	if len(s.Token.Teams) > 0 {
		return s.Token.Teams
	}
	w.teamsMu.Lock()
	defer w.teamsMu.Unlock()
	if w.teamsCache != nil && w.opts.Now().Before(w.teamsAt.Add(teamsTTL)) {
		return w.teamsCache
	}
	teams, err := w.k.Teams(ctx)
	if err != nil {
		return nil
	}
	w.teamsCache, w.teamsAt = teams, w.opts.Now()
	return w.teamsCache
}

// envRow reads what one row shows: last run, drift, component counts, the
// applied revision's commit.
func (w *Web) envRow(ctx context.Context, e store.Environment) (envRow, error) {
	row := envRow{ID: e.ID, Team: e.Team, Name: e.Name, AppliedRevision: e.AppliedRevision, UpdatedAt: e.UpdatedAt}
	last, err := w.k.LastRun(ctx, e.ID)
	if err != nil {
		return row, err
	}
	if row.Invalid, err = w.k.InvalidOf(ctx, e); err != nil {
		return row, err
	}
	locked := false
	if last != nil {
		row.LastRun = last
		row.LastRunTone = toneOf(last.Status)
		locked = last.Status == store.StatusRunning
	}
	row.State = envState(e.Status, locked)
	row.Tone = toneOf(row.State)
	if row.Tone == ToneNeutral {
		row.Tone = toneOf(e.Status)
	}
	if row.Drift, err = w.k.LastDrift(ctx, e.ID); err != nil {
		return row, err
	}
	counts, err := w.k.ComponentCounts(ctx, e.ID)
	if err != nil {
		return row, err
	}
	for name, n := range counts {
		row.Counts = append(row.Counts, stateCount{State: name, Tone: toneOf(name), N: n})
	}
	slices.SortFunc(row.Counts, func(a, b stateCount) int { return cmp.Compare(a.State, b.State) })
	if e.AppliedRevision > 0 {
		rev, err := w.k.Revision(ctx, e.ID, e.AppliedRevision)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return row, err
		}
		row.Commit = rev.Commit
	}
	return row, nil
}
