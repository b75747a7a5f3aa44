package knit

file_at(path) := {"environment": {"labels": {}}, "components": [{"name": "files", "resources": [{
	"address": "local_file.f", "type": "local_file", "actions": ["create"], "after": {"filename": path},
}]}]}

test_file_outside_tmp_is_denied if {
	some d in deny with input as file_at("/etc/passwd")
	d.resource == "local_file.f"
}

test_file_in_tmp_is_allowed if {
	count(deny) == 0 with input as file_at("/tmp/knit/x.txt")
}

test_tmp_prefix_is_not_enough if {
	count(deny) == 1 with input as file_at("/tmpfoo/x")
}
