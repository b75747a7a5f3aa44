variable "subnet_id" { type = string }
variable "storage_gb" { type = number }

resource "terraform_data" "db" {
  input = { subnet = var.subnet_id, storage = var.storage_gb }
}

output "endpoint" { value = "db.${replace(var.subnet_id, "/[./]/", "-")}.internal:5432" }
output "password" {
  value     = substr(sha256("pw-${terraform_data.db.id}"), 0, 20)
  sensitive = true
}
