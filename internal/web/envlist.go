package web

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// pageSize is how many environments one page of the list shows.
const pageSize = 50

// envStates are the states the list can be filtered by (store statuses),
// each named as the list shows it.
var envStates = func() []struct{ Value, Label string } {
	states := []struct{ Value, Label string }{{"", "any state"}}
	for _, st := range []store.EnvStatus{engine.EnvApplied, engine.EnvFailed, engine.EnvAwaiting, engine.EnvRejected, engine.EnvDrifted, engine.EnvTornDown, engine.EnvInterrupted, engine.EnvPaused} {
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
	LastRun         *view.Run
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
	p := envListPage{Team: q.Get("team"), State: q.Get("state"), Sort: q.Get("sort"), States: envStates, Sorts: envSorts}
	if q.Get("live") != "0" { // ?live=0: no live updates (liveOff)
		p.Live = "/live?since=" + w.live.allMark(ctx)
	}
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
	var err error
	if p.Sort == "name" {
		err = w.envPageByName(ctx, &p, q.Get("after"), link)
	} else {
		err = w.envPageSorted(ctx, &p, q.Get("page"), link)
	}
	return p, err
}

// envOrders are the store's orders of the list's sorts (any other: by ID,
// in numbered pages).
var envOrders = map[string]view.EnvironmentOrder{"state": view.ByStatus, "updated": view.ByUpdated}

// envPageByName reads one page in ID order straight from the store's index,
// after a cursor: its cost does not grow with the number of environments.
func (w *Web) envPageByName(ctx context.Context, p *envListPage, after string, link func(url.Values) string) error {
	p.Self = link(url.Values{"after": {after}})
	if after == "" {
		p.Self = link(nil)
	} else {
		p.Prev = link(nil)
	}
	list, err := knit.NewRecords(w.k).EnvironmentList(ctx, knit.EnvironmentListFilter{
		Filter: knit.EnvironmentFilter{Team: p.Team, Status: p.State, After: after, Limit: pageSize + 1}})
	if err != nil {
		return err
	}
	rows := list.Rows
	if len(rows) > pageSize {
		rows = rows[:pageSize]
		p.Next = link(url.Values{"after": {rows[pageSize-1].ID}})
	}
	if len(rows) > 0 {
		p.Range = fmt.Sprintf("%s to %s", rows[0].ID, rows[len(rows)-1].ID)
	}
	p.addRows(rows)
	return nil
}

// envPageSorted reads one numbered page in the sort's order, sorted and
// cut by the store; a page past the end is the last one.
func (w *Web) envPageSorted(ctx context.Context, p *envListPage, page string, link func(url.Values) string) error {
	p.PageNo, _ = strconv.Atoi(page)
	p.PageNo = max(p.PageNo, 1)
	read := func() (knit.EnvironmentList, error) {
		return knit.NewRecords(w.k).EnvironmentList(ctx, knit.EnvironmentListFilter{Order: envOrders[p.Sort], Offset: (p.PageNo - 1) * pageSize,
			Filter: knit.EnvironmentFilter{Team: p.Team, Status: p.State, Limit: pageSize}})
	}
	list, err := read()
	if err != nil {
		return err
	}
	p.Total = list.Total
	p.Pages = max(1, (p.Total+pageSize-1)/pageSize)
	if p.PageNo > p.Pages { // a stale link: the environments are fewer now
		p.PageNo = p.Pages
		if list, err = read(); err != nil {
			return err
		}
		p.Total = list.Total
	}
	p.First, p.Last = (p.PageNo-1)*pageSize+1, (p.PageNo-1)*pageSize+len(list.Rows)
	num := func(n int) string { return link(url.Values{"page": {strconv.Itoa(n)}}) }
	p.Self = num(p.PageNo)
	if p.PageNo > 1 {
		p.Prev = num(p.PageNo - 1)
	}
	if p.PageNo < p.Pages {
		p.Next = num(p.PageNo + 1)
	}
	p.addRows(list.Rows)
	return nil
}

// addRows adds the library's rows to the page, as the list shows them.
func (p *envListPage) addRows(rows []knit.EnvironmentRow) {
	for _, r := range rows {
		row := rowOf(r)
		p.Rows = append(p.Rows, row)
		if row.Invalid != nil {
			p.Invalid = append(p.Invalid, row)
		}
	}
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
	teams, err := knit.NewRecords(w.k).Teams(ctx)
	if err != nil {
		return nil
	}
	w.teamsCache, w.teamsAt = teams, w.opts.Now()
	return w.teamsCache
}

// rowOf is one row as the list shows it: state (applying while its
// newest run runs), last run, drift, component counts by state, the
// applied revision's commit.
func rowOf(r knit.EnvironmentRow) envRow {
	row := envRow{ID: r.ID, Team: r.Team, Name: r.Name, AppliedRevision: r.AppliedRevision, UpdatedAt: r.UpdatedAt,
		LastRun: r.LastRun, Drift: r.Drift, Commit: r.AppliedCommit, Invalid: r.Invalid}
	locked := false
	if r.LastRun != nil {
		row.LastRunTone = toneOf(r.LastRun.Status)
		locked = r.LastRun.Status == store.StatusRunning
	}
	row.State = envState(r.Status, locked)
	row.Tone = toneOf(row.State)
	if row.Tone == ToneNeutral {
		row.Tone = toneOf(r.Status)
	}
	for name, n := range r.Components {
		row.Counts = append(row.Counts, stateCount{State: name, Tone: toneOf(name), N: n})
	}
	slices.SortFunc(row.Counts, func(a, b stateCount) int { return cmp.Compare(a.State, b.State) })
	return row
}
