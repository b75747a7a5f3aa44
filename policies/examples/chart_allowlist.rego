# Helm charts only from the organisation's chart repositories (a chart from
# a local folder or git is not from a repository, and is left alone).
package knit

allowed_chart_repos := {"https://charts.example.com", "oci://registry.example.com/charts"}

deny contains {"msg": msg, "component": c.name} if {
	some c in input.components
	c.type == "helm"
	from_repository(c.source)
	not c.source in allowed_chart_repos
	msg := sprintf("chart of %s comes from %s, which is not an allowed chart repository", [c.name, c.source])
}

from_repository(source) if startswith(source, "https://")

from_repository(source) if startswith(source, "oci://")
