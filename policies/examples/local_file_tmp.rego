# A local_file may only be written under /tmp.
package knit

deny contains {"msg": msg, "component": c.name, "resource": r.address} if {
	some c in input.components
	some r in c.resources
	r.type == "local_file"
	some a in r.actions
	a in {"create", "update"}
	name := r.after.filename
	not startswith(name, "/tmp/")
	msg := sprintf("%s writes %s outside /tmp", [r.address, name])
}
