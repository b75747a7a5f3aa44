# A stand-in for terraform-aws-eks: it "creates" a cluster and outputs its
# kubeconfig, read from a file you provide.
variable "vpc_id" { type = string }
variable "kubeconfig_file" { type = string }

resource "terraform_data" "cluster" {
  input = var.vpc_id
}

output "cluster_name" { value = "payment-prod-blue-${terraform_data.cluster.output}" }

output "kubeconfig" {
  value     = file(var.kubeconfig_file)
  sensitive = true
}
