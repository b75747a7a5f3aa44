# A change freeze: nothing changes from Friday 12:00 UTC to Monday 00:00
# UTC. Plans are still allowed, and so is a run with no changes.
package knit

frozen(ns) if {
	day := time.weekday(ns)
	day in {"Saturday", "Sunday"}
}

frozen(ns) if {
	time.weekday(ns) == "Friday"
	[h, _, _] := time.clock(ns)
	h >= 12
}

deny contains {"msg": msg, "component": c.name} if {
	input.run.kind != "plan"
	frozen(input.run.time_ns)
	some c in input.components
	c.changes.add + c.changes.change + c.changes.destroy > 0
	msg := sprintf("change freeze (Friday 12:00 UTC to Monday): %s would change", [c.name])
}
