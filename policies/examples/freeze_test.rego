package knit

run_at(kind, t) := {"environment": {"labels": {}}, "run": {"kind": kind, "time_ns": time.parse_rfc3339_ns(t)},
	"components": [{"name": "app", "changes": {"add": 1, "change": 0, "destroy": 0}, "resources": []}]}

test_friday_afternoon_is_frozen if {
	count(deny) == 1 with input as run_at("apply", "2026-11-27T15:00:00Z")
}

test_sunday_is_frozen if {
	count(deny) == 1 with input as run_at("apply", "2026-11-29T09:00:00Z")
}

test_friday_morning_is_open if {
	count(deny) == 0 with input as run_at("apply", "2026-11-27T11:59:00Z")
}

test_a_plan_is_never_frozen if {
	count(deny) == 0 with input as run_at("plan", "2026-11-28T10:00:00Z")
}
