# The example's Prometheus (prometheus.sh): it scrapes every app instance
# each second, found through the targets folder the instances write.
variable "run_dir" {
  type = string
}

variable "port" {
  type        = number
  default     = 0
  description = "the port Prometheus listens on (127.0.0.1); 0: a free one"
}

locals {
  state = "${var.run_dir}/prometheus"
}

resource "terraform_data" "prometheus" {
  triggers_replace = [var.port]
  input            = { state = local.state, script = "${abspath(path.module)}/prometheus.sh", targets = "${var.run_dir}/targets" }

  provisioner "local-exec" {
    command     = "bash '${self.input.script}' start"
    environment = { STATE = self.input.state, TARGETS = self.input.targets, PORT = var.port }
  }

  provisioner "local-exec" {
    when        = destroy
    command     = "bash '${self.input.script}' stop"
    environment = { STATE = self.input.state, TARGETS = self.input.targets }
  }
}

data "local_file" "addr" {
  filename   = "${local.state}/addr"
  depends_on = [terraform_data.prometheus]
}

output "url" {
  value = "http://${trimspace(data.local_file.addr.content)}"
}
