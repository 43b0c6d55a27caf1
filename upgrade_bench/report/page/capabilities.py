"""check_capabilities' records side by side, one column per GPU: the guide's first question
(can this GPU and stack do X?) answered without a benchmark where one GPU can and one cannot."""


def _cell(record) -> str:
    if record is None:
        return "–"
    value = record.get("value")
    if isinstance(value, str) and len(value) <= 20:  # a version
        return f"{record['status']} · {value}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return record["status"]
    shown = f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"
    approx = "~" if str(record.get("detail", "")).startswith("estimate") else ""
    return f"{record['status']} · {approx}{shown}"


def capability_table(records_by_gpu: dict) -> str:
    """Markdown table, one column per GPU. `records_by_gpu`: {gpu: {item: capability record}}.

    A row where one GPU says ok and another does not is the guide's "no benchmark needed"
    answer: its item is bold and the last column names the GPUs where it works.
    """
    gpus = list(records_by_gpu)
    by_item = {}
    for gpu, records in records_by_gpu.items():
        for r in records.values():
            by_item.setdefault(r["item"], {})[gpu] = r
    lines = ["| item | " + " | ".join(gpus) + " | difference |",
             "| --- | " + " | ".join("---" for _ in gpus) + " | --- |"]
    for item, cells in by_item.items():
        present = [g for g in gpus if g in cells]
        ok = [g for g in present if cells[g]["status"] == "ok"]
        differs = 0 < len(ok) < len(present)
        name = f"**{item}**" if differs else item
        shown = [(f"**{_cell(cells.get(g))}**" if differs and g in ok else _cell(cells.get(g)))
                 for g in gpus]
        note = "◀ ok only on " + ", ".join(ok) if differs else ""
        lines.append(f"| {name} | " + " | ".join(shown) + f" | {note} |")
    return "\n".join(lines) + "\n"
