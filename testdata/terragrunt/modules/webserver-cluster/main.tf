variable "name" { type = string }
variable "instance_type" { type = string }
variable "db_address" { type = string }
variable "db_port" { type = number }
variable "instance_class" { type = string }
variable "tier" { type = string }
variable "owner" { type = string }
variable "account_name" { type = string }
variable "aws_account_id" { type = string }
variable "aws_region" { type = string }
variable "environment" { type = string }

resource "terraform_data" "web" {
  input = "${var.name} -> ${var.db_address}:${var.db_port}"
}

output "url" { value = terraform_data.web.output }
