// Package schedule parses the schedules knit runs drift checks on and spreads
// environments that share a schedule over a window with a deterministic
// per-key jitter.
//
// A schedule is one of
//
//	@every 30m       a fixed period (a Go duration, at least one minute)
//	@hourly, @daily  and @weekly, @monthly, @yearly/@annually, @midnight
//	*/15 * * * *     standard five-field cron: minute hour day-of-month month day-of-week
//
// Cron fields accept *, ?, numbers, ranges (1-5), lists (1,3,5), steps
// (*/15, 0-30/10, 5/20) and, for months and weekdays, three-letter English
// names (JAN-DEC, SUN-SAT, case-insensitive). Weekday 7 is Sunday, like 0.
// As in Vixie cron, when both day-of-month and day-of-week are restricted a
// day matches if either does; when one of them is * only the other counts.
//
// Five-field expressions and the @-shorthands are parsed and scheduled by
// github.com/robfig/cron/v3 (its standard parser); this package checks them
// first, so that a problem is named with its field and offset, folds
// weekday 7 onto 0 and refuses expressions that never fire. @every is its
// own: robfig/cron rounds periods to whole seconds, and tests use shorter.
//
// The package knows nothing about environments: a key passed to Jitter is
// just a string.
package schedule
