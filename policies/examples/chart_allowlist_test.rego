package knit

chart_from(repo) := {"environment": {"labels": {}}, "components": [{"name": "web", "type": "helm", "source": repo, "resources": []}]}

test_allowed_repo if {
	count(deny) == 0 with input as chart_from("https://charts.example.com")
}

test_other_repo_is_denied if {
	some d in deny with input as chart_from("https://charts.bitnami.com/bitnami")
	d.component == "web"
}

test_other_oci_registry_is_denied if {
	count(deny) == 1 with input as chart_from("oci://ghcr.io/someone/charts")
}

test_local_chart_is_allowed if {
	count(deny) == 0 with input as chart_from("./charts/web")
}
