"""A lean Adam step shared by the planner, the scenario optimiser and the selector.

References
----------
D. P. Kingma, J. Ba. *Adam: A Method for Stochastic Optimization*. ICLR 2015.
"""

from __future__ import annotations

from typing import Any


class _Adam:
    """Adam (Kingma & Ba 2015) with torch's defaults, the arithmetic of ``torch.optim.Adam``'s
    single-tensor CPU step operation for operation (bit-identical parameters, tested), without its
    per-step framework overhead (and without importing ``torch._dynamo``, which the first
    ``torch.optim`` optimiser of a process does): the library's thousands of small Adam steps
    spend most of their time there.

    .. math:: m \\leftarrow m + (1 - \\beta_1)(g - m),\\quad v \\leftarrow \\beta_2 v + (1 - \\beta_2) g^2,\\quad
              \\theta \\leftarrow \\theta - \\frac{\\eta}{1 - \\beta_1^k}\\,\\frac{m}{\\sqrt{v}/\\sqrt{1 - \\beta_2^k} + \\epsilon}

    Parameters
    ----------
    params : iterable of torch.Tensor
    lr : float

    References
    ----------
    D. P. Kingma, J. Ba. *Adam: A Method for Stochastic Optimization*. ICLR 2015.
    PyTorch ``torch/optim/adam.py``, ``_single_tensor_adam`` (the form reproduced).
    """

    beta1, beta2, eps = 0.9, 0.999, 1e-8

    def __init__(self, params: Any, lr: float) -> None:
        self.params = list(params)
        self.lr = lr
        self.k = 0.0
        self.m: list[Any] = []
        self.v: list[Any] = []

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        import torch

        with torch.no_grad():
            if not self.m:
                self.m = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
                self.v = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
            self.k += 1.0  # every parameter of ours gets a gradient at every step
            b1, b2 = self.beta1, self.beta2
            step_size = self.lr / (1 - b1**self.k)
            bc2_sqrt = (1 - b2**self.k) ** 0.5
            for p, m, v in zip(self.params, self.m, self.v, strict=True):
                g = p.grad
                m.lerp_(g, 1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                p.addcdiv_(m, (v.sqrt() / bc2_sqrt).add_(self.eps), value=-step_size)
