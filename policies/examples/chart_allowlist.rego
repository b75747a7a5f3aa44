# Helm charts only from the organisation's chart repositories.
package knit

allowed_chart_repos := {"https://charts.example.com", "oci://registry.example.com/charts"}

deny contains {"msg": msg, "component": c.name} if {
	some c in input.components
	c.type == "helm"
	startswith(c.source, "https://")
	not c.source in allowed_chart_repos
	msg := sprintf("chart of %s comes from %s, which is not an allowed chart repository", [c.name, c.source])
}

deny contains {"msg": msg, "component": c.name} if {
	some c in input.components
	c.type == "helm"
	startswith(c.source, "oci://")
	not c.source in allowed_chart_repos
	msg := sprintf("chart of %s comes from %s, which is not an allowed chart repository", [c.name, c.source])
}
