# No destroy in an environment labelled env=prod unless a second person
# must approve (spec.approval.requireOtherApprover).
package knit

deny contains {"msg": msg, "component": c.name, "resource": r.address} if {
	input.environment.labels.env == "prod"
	not input.environment.requireOtherApprover
	some c in input.components
	some r in c.resources
	"delete" in r.actions
	msg := sprintf("%s would destroy %s in prod; set spec.approval.requireOtherApprover so a second person approves", [c.name, r.address])
}
