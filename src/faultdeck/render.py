"""Results drawn for people and machines: a call-path diff as text, JSON or one HTML page,
and a fault matrix as a rich table, summary lines or JSON (what ``faultdeck diff`` and
``faultdeck rehearse`` print). Nothing here prints: the caller decides where each goes.
"""

from ._diff.render import diff_html, diff_json, diff_text
from ._rehearse.render import matrix_json, matrix_summary, matrix_table

__all__ = ["diff_html", "diff_json", "diff_text", "matrix_json", "matrix_summary", "matrix_table"]
