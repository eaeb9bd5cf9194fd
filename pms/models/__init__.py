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
                                     CompanyArApplication,
                                     CompanyArItem,
                                     CompanyBilling,
                                     CompanyCreditOverride,
                                     CompanyInvitation,
                                     CompanyInvoice,
                                     CompanyInvoiceSequence,
                                     CompanyPaymentMethod,
                                     CompanyReceivableAccount,
                                     CompanyRoutingInstruction,
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
from pms.models.platform import AuditEntry, EventStream, IdempotencyRecord, Job, OutboxEvent
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
    OutboxEvent, AuditEntry, IdempotencyRecord, Job, EventStream,
    Reservation, RoomStay, ReservationComment, ReservationMessage, ServiceRequest,
    Folio, FolioCharge, FolioPayment,
    InventoryDay, Maintenance, RateSchedule, Restriction, RatePlanAllotment, PromoCode,
    TransactionCode, GiftVoucher, Invoice, InvoiceSequence, LedgerPosting,
    NightAuditRun, NightAuditStep,
    HousekeepingTask, EnvironmentSetup, SandboxEmail,
    LovEntry, SettingsDocument, PropertyImage,
    DigitalKey, KioskConfig, Feedback, GuestPaymentMethod,
    CompanyUser, CompanyPaymentMethod, CompanyReceivableAccount, CompanyBilling,
    CompanyCreditOverride, CompanyInvitation,
    CompanyRoutingInstruction, CompanyArItem, CompanyInvoice, CompanyInvoiceSequence,
    CompanyArApplication,  # the company's receivable ledger
    FunctionSpace, BanquetEvent, SpaceBooking, EventResourceItem, EventResource,
    KioskTerminal, KioskSession,
    EventPosting,
    AriStream,
    RoomBlock, RoomBlockNight,
    PolicySet, PolicyRelation, PolicyAttribute, PolicyVersion,
]

__all__ = [m.__name__ for m in ALL_MODELS] + ["ALL_MODELS"]
