package knit

prod_destroy := {
	"environment": {"labels": {"env": "prod"}, "requireOtherApprover": false},
	"run": {"kind": "apply"},
	"components": [{"name": "db", "resources": [{"address": "aws_db_instance.main", "actions": ["delete"]}]}],
}

test_destroy_in_prod_is_denied if {
	some d in deny with input as prod_destroy
	d.component == "db"
	d.resource == "aws_db_instance.main"
}

test_replace_in_prod_is_denied if {
	count(deny) == 1 with input as json.patch(prod_destroy, [{"op": "replace", "path": "/components/0/resources/0/actions", "value": ["delete", "create"]}])
}

test_destroy_with_other_approver_is_allowed if {
	count(deny) == 0 with input as json.patch(prod_destroy, [{"op": "replace", "path": "/environment/requireOtherApprover", "value": true}])
}

test_destroy_outside_prod_is_allowed if {
	count(deny) == 0 with input as json.patch(prod_destroy, [{"op": "replace", "path": "/environment/labels/env", "value": "dev"}])
}
