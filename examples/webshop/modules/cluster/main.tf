variable "vpc_id" { type = string }
variable "subnet_id" { type = string }
variable "node_count" { type = number }
variable "labels" { type = map(string) }

resource "terraform_data" "cluster" {
  input = { vpc = var.vpc_id, subnet = var.subnet_id, nodes = var.node_count, labels = var.labels }
}

output "endpoint" { value = "https://k8s.${var.vpc_id}.internal:6443" }
