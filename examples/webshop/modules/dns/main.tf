variable "target" { type = string }
variable "zone" { type = string }

resource "terraform_data" "record" {
  input = { target = var.target, zone = var.zone }
}

output "fqdn" { value = "shop.${var.zone}" }
