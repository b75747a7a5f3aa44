terraform {
  required_providers {
    local = { source = "hashicorp/local", version = "1.4.0" }
  }
}
variable "cluster_endpoint" { type = string }
variable "db_endpoint" { type = string }
variable "db_password" {
  type      = string
  sensitive = true
}
variable "replicas" { type = number }

# The app's rendered configuration: a real file, which the local provider
# re-reads on every plan, so editing or deleting it shows up as drift.
resource "local_file" "config" {
  filename = "${path.module}/app.conf"
  content  = <<-EOT
    cluster  = ${var.cluster_endpoint}
    database = ${var.db_endpoint}
    replicas = ${var.replicas}
  EOT
}

output "url" { value = "http://app.${substr(sha1(var.cluster_endpoint), 0, 6)}.internal" }
output "config_file" { value = abspath(local_file.config.filename) }
