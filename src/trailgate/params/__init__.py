"""GoldenGate parameter files: read them into typed specs, and match tables against them.

``parse_params(path)`` returns an :class:`ExtractParams` or :class:`ReplicatParams`;
``match_table`` and ``resolve_map`` apply GoldenGate's wildcard rules.
"""

from trailgate.params.model import (
    ColMapEntry,
    ColumnRef,
    Compare,
    DdlRule,
    DiscardFileSpec,
    ExtractParams,
    FunctionCall,
    GlobalsParams,
    GroupParams,
    Literal,
    Logical,
    MapSpec,
    ReplicatParams,
    ReportCount,
    SparkOptions,
    TableSpec,
    TargetSpec,
    TokenSpec,
    TranlogOptions,
    WhereClause,
)
from trailgate.params.names import (
    find_map,
    match_table,
    parse_name,
    resolve_map,
    split_name,
    target_name,
)
from trailgate.params.parser import (
    KNOWN_PARAMETERS,
    parse_globals,
    parse_group_params,
    parse_params,
    parse_params_text,
)

__all__ = [
    "KNOWN_PARAMETERS",
    "ColMapEntry",
    "ColumnRef",
    "Compare",
    "DdlRule",
    "DiscardFileSpec",
    "ExtractParams",
    "FunctionCall",
    "GlobalsParams",
    "GroupParams",
    "Literal",
    "Logical",
    "MapSpec",
    "ReplicatParams",
    "ReportCount",
    "SparkOptions",
    "TableSpec",
    "TargetSpec",
    "TokenSpec",
    "TranlogOptions",
    "WhereClause",
    "find_map",
    "match_table",
    "parse_globals",
    "parse_group_params",
    "parse_name",
    "parse_params",
    "parse_params_text",
    "resolve_map",
    "split_name",
    "target_name",
]
