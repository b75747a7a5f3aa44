variable "name" { type = string }
variable "instance_class" { type = string }
variable "allocated_storage" { type = number }
variable "tier" { type = string }
variable "owner" { type = string }
variable "account_name" { type = string }
variable "aws_account_id" { type = string }
variable "aws_region" { type = string }
variable "environment" { type = string }

resource "terraform_data" "db" {
  input = "${var.name}/${var.instance_class}/${var.allocated_storage}"
}

output "address" { value = "${var.name}.db.internal" }
output "port" { value = 3306 }
