# A stand-in for a VPC: real resources, no cloud. The delay models provider latency.
variable "cidr" { type = string }
variable "subnet_count" { type = number }
variable "region" { type = string }
variable "delay" {
  type    = number
  default = 0
}

resource "terraform_data" "vpc" {
  input = { cidr = var.cidr, region = var.region }
  provisioner "local-exec" { command = "sleep ${var.delay}" }
}

output "vpc_id" { value = "vpc-${substr(sha1(terraform_data.vpc.id), 0, 8)}" }
output "private_subnets" {
  value = [for i in range(var.subnet_count) : cidrsubnet(var.cidr, 8, i)]
}
