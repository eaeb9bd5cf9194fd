"""Every model module, imported so migrations and create_tables see them."""

from pms.models.ari import AriStream
from pms.models.banquets import (
                                     BanquetEvent,
                                     EventPosting,
                                     EventResource,
                                     EventResourceItem,
                                     FunctionSpace,
                                     SpaceBooking,
)
from pms.models.cashiering import (
                                     GiftVoucher,
                                     Invoice,
                                     InvoiceSequence,
                                     LedgerPosting,
                                     TransactionCode,
)
from pms.models.catalog import Item, Package, RatePlan
from pms.models.companies import (
                                  CompanyBilling,
                                  CompanyCreditOverride,
                                  CompanyPaymentMethod,
                                  CompanyReceivableAccount,
                                  CompanyUser,
)
from pms.models.end_of_day import NightAuditRun, NightAuditStep
from pms.models.environment import EnvironmentSetup, SandboxEmail
from pms.models.feedback import Feedback, GuestPaymentMethod
from pms.models.folios import Folio, FolioCharge, FolioPayment
from pms.models.housekeeping import HousekeepingTask
from pms.models.inventory import InventoryDay, Maintenance
from pms.models.keys import DigitalKey
from pms.models.kiosk import KioskConfig, KioskSession, KioskTerminal
from pms.models.platform import AuditEntry, IdempotencyRecord, Job, OutboxEvent
from pms.models.policies import PolicyAttribute, PolicyRelation, PolicySet, PolicyVersion
from pms.models.profiles import Profile
from pms.models.property import Property, Room, RoomType
from pms.models.rates import PromoCode, RatePlanAllotment, RateSchedule, Restriction
from pms.models.reservations import (
                                     Reservation,
                                     ReservationComment,
                                     ReservationMessage,
                                     RoomStay,
                                     ServiceRequest,
)
from pms.models.room_blocks import RoomBlock, RoomBlockNight
from pms.models.settings import LovEntry, PropertyImage, SettingsDocument

ALL_MODELS = [
    Property, RoomType, Room, RatePlan, Item, Package, Profile,
    OutboxEvent, AuditEntry, IdempotencyRecord, Job,
    Reservation, RoomStay, ReservationComment, ReservationMessage, ServiceRequest,
    Folio, FolioCharge, FolioPayment,
    InventoryDay, Maintenance, RateSchedule, Restriction, RatePlanAllotment, PromoCode,
    TransactionCode, GiftVoucher, Invoice, InvoiceSequence, LedgerPosting,
    NightAuditRun, NightAuditStep,
    HousekeepingTask, EnvironmentSetup, SandboxEmail,
    LovEntry, SettingsDocument, PropertyImage,  # issue 32
    DigitalKey, KioskConfig, Feedback, GuestPaymentMethod,  # issue 29
    CompanyUser, CompanyPaymentMethod, CompanyReceivableAccount, CompanyBilling,
    CompanyCreditOverride,
    FunctionSpace, BanquetEvent, SpaceBooking, EventResourceItem, EventResource,  # issue 34
    KioskTerminal, KioskSession,  # issue 30
    EventPosting,  # issue 34
    AriStream,  # issue 35
    RoomBlock, RoomBlockNight,  # issue 33
    PolicySet, PolicyRelation, PolicyAttribute, PolicyVersion,  # issue 37
]

__all__ = [m.__name__ for m in ALL_MODELS] + ["ALL_MODELS"]
