"""Stages 9-10, the report: figures (PDF + PNG) and one self-contained web page.

`figures` draws the study's figures with matplotlib from the summary, scores and fits;
`webapp` embeds the summary and scores in an offline HTML page whose script and styles live
in `webapp_assets/`. Nothing here imports torch or timm (a test checks it): figures and the
page are made from published tables (docs/figures.md, docs/webapp.md). The map of the
package: docs/design.md.
"""
