"""Migration 072: members' room and tax billed to a room block's master folio.

- `room_block.master_folio_routing`: the block's billing instruction for its members' room
  nights, NONE (each guest pays their own), ROOM_AND_TAX (the room line and its tax lines go
  to the master folio) or ROOM_TAX_AND_PACKAGES (the packages of the night too).
- `folio.routing` and `folio.routing_folio_id`: on a member's guest folio, the instruction
  in force and the master folio it sends those lines to (null: none). The folio carries them
  so every reader of a folio's state (the night audit, check-out, the projected room nights)
  knows the routing from the folio row itself; the block's service keeps them in step with
  the block while the folio is OPEN, and clears them when the master folio is settled.
"""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('room_block',
                        master_folio_routing=pw.CharField(max_length=24, default='NONE'))
    migrator.add_fields('folio',
                        routing=pw.CharField(max_length=24, null=True),
                        routing_folio_id=pw.UUIDField(null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('folio', 'routing', 'routing_folio_id')
    migrator.remove_fields('room_block', 'master_folio_routing')
