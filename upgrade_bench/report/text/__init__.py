"""Log text made safe where it is shown (markdown, HTML), and how a number and a markdown table are written."""
