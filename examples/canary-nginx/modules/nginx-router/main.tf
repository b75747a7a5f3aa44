# The example's router: nginx sending canary_weight percent of the requests
# to the canary and the rest to the stable instance (nginx.sh). A change of
# weight or address rewrites the upstream file and reloads nginx; no
# request fails.
variable "stable" {
  type        = string
  description = "the stable instance, HOST:PORT"
}

variable "canary" {
  type        = string
  description = "the canary instance, HOST:PORT (the stable one's while no canary is up)"
}

variable "canary_weight" {
  type        = number
  default     = 0
  description = "the canary's share of the requests, in percent"
}

variable "port" {
  type        = number
  default     = 0
  description = "the port nginx listens on (127.0.0.1); 0: a free one"
}

variable "run_dir" {
  type = string
}

locals {
  state  = "${var.run_dir}/nginx"
  script = "${abspath(path.module)}/nginx.sh"
}

resource "terraform_data" "nginx" {
  input = { state = local.state, script = local.script }

  provisioner "local-exec" {
    when        = destroy
    command     = "bash '${self.input.script}' stop"
    environment = { STATE = self.input.state }
  }
}

resource "terraform_data" "weights" {
  triggers_replace = [var.stable, var.canary, var.canary_weight, var.port]
  depends_on       = [terraform_data.nginx]

  provisioner "local-exec" {
    command = "bash '${local.script}' apply"
    environment = {
      STATE = local.state, PORT = var.port, STABLE = var.stable, CANARY = var.canary, CANARY_WEIGHT = var.canary_weight
    }
  }
}

data "local_file" "addr" {
  filename   = "${local.state}/addr"
  depends_on = [terraform_data.weights]
}

output "url" {
  value = "http://${trimspace(data.local_file.addr.content)}"
}
