"""The trust core's judgement in types: what a check finds (`rules.Finding`, each under a
`rules.Rule` that names the docs/trust.md rows it enforces), how findings fold into a
verdict and its exit code (`verdicts`), and the one place they become sentences (`words`).
The modules beside them make the findings: a dataset's integrity (`integrity`), the order
of seal and measurement and the code that measured (`order`), and verdict files
(`verdict_files`); `problems` carries `verify`'s problems as findings across processes."""
